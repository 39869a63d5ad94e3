{{/*
The prefix of every object's name: the release name when it contains the
chart's name (release "profilesync" gives profilesync-controller-manager, as
config/default's namePrefix does), else <release>-<chart>.
*/}}
{{- define "profilesync.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 28 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 28 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 28 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The labels Helm adds to every object, which config/default does not have
(docs/helm.md#how-the-chart-differs-from-configdefault).
*/}}
{{- define "profilesync.helmLabels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The labels of the objects config/ labels: the name, and Helm's.
*/}}
{{- define "profilesync.labels" -}}
app.kubernetes.io/name: profilesync
{{ include "profilesync.helmLabels" . }}
{{- end -}}

{{/*
The labels of the manager's objects: the common ones and the component.
*/}}
{{- define "profilesync.managerLabels" -}}
{{ include "profilesync.labels" . }}
app.kubernetes.io/component: controller-manager
{{- end -}}

{{/*
What the Services select and the Deployment's selector: the pod's labels as
config/manager has them.
*/}}
{{- define "profilesync.selectorLabels" -}}
app.kubernetes.io/name: profilesync
app.kubernetes.io/component: controller-manager
{{- end -}}

{{- define "profilesync.serviceAccountName" -}}
{{ include "profilesync.fullname" . }}-controller-manager
{{- end -}}

{{- define "profilesync.webhookServiceName" -}}
{{ include "profilesync.fullname" . }}-webhook-service
{{- end -}}

{{- define "profilesync.certificateName" -}}
{{ include "profilesync.fullname" . }}-serving-cert
{{- end -}}

{{/*
The image reference: repository:tag, or repository@digest when a digest is set.
*/}}
{{- define "profilesync.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}
{{- end -}}

{{/*
The webhooks need a certificate: cert-manager's, or a caBundle for a Secret
the user provides. Rendering fails otherwise, so the chart never installs a
fail-closed webhook configuration that no server can answer.
*/}}
{{- define "profilesync.checkWebhookCertificate" -}}
{{- if and .Values.webhook.enabled (not .Values.webhook.certManager.enabled) (not .Values.webhook.caBundle) -}}
{{- fail "webhook.enabled is true and webhook.certManager.enabled is false, but webhook.caBundle is empty: the API server could not trust the webhook's certificate, and its failurePolicy Fail would refuse every CloudProfile write. Set webhook.caBundle (base64 PEM) and create the Secret webhook.certSecretName, enable webhook.certManager, or set webhook.enabled=false (docs/helm.md#admission-webhooks)" -}}
{{- end -}}
{{- end -}}
