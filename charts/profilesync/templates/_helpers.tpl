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
The Secret of the webhook server's tls.crt and tls.key: webhook.certSecretName,
else <fullname>-webhook-server-cert, config/default's name.
*/}}
{{- define "profilesync.webhookCertSecretName" -}}
{{- default (printf "%s-webhook-server-cert" (include "profilesync.fullname" .)) .Values.webhook.certSecretName -}}
{{- end -}}

{{/*
The ValidatingWebhookConfiguration's name: the generated one's
(config/webhook/manifests.yaml), with the release's prefix.
*/}}
{{- define "profilesync.webhookConfigurationName" -}}
{{- $generated := .Files.Get "files/generated/webhooks.yaml" | fromYaml -}}
{{ include "profilesync.fullname" . }}-{{ $generated.metadata.name }}
{{- end -}}

{{/*
The generated manager rules (config/rbac/role.yaml, copied by `make
manifests`) of the given kind, ClusterRole or Role, with the names of the
objects they grant rights on (resourceNames) given the release's names, as
config/default's namePrefix and nameReference give them. A resourceName the
chart does not know fails rendering, rather than granting a right on an
object of a name the release does not have.
Call with (dict "root" $ "kind" "Role").
*/}}
{{- define "profilesync.managerRules" -}}
{{- $root := .root -}}
{{- $names := dict
  "validating-webhook-configuration" (include "profilesync.webhookConfigurationName" $root)
  "webhook-server-cert" (include "profilesync.webhookCertSecretName" $root) -}}
{{- $rules := list -}}
{{- range $document := regexSplit "(?m)^---\\s*$" ($root.Files.Get "files/generated/role.yaml") -1 -}}
{{- $role := fromYaml $document -}}
{{- if and $role (eq (toString $role.kind) $.kind) -}}
{{- range $role.rules -}}
{{- $rule := deepCopy . -}}
{{- if hasKey $rule "resourceNames" -}}
{{- $renamed := list -}}
{{- range $rule.resourceNames -}}
{{- if not (hasKey $names .) -}}
{{- fail (printf "files/generated/role.yaml: the %s's rules name %q in resourceNames, which the chart does not know: add it to profilesync.managerRules in templates/_helpers.tpl" $.kind .) -}}
{{- end -}}
{{- $renamed = append $renamed (get $names .) -}}
{{- end -}}
{{- $_ := set $rule "resourceNames" $renamed -}}
{{- end -}}
{{- $rules = append $rules $rule -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $rules -}}
{{- end -}}

{{/*
The admission mode (webhook.certProvisioning) and its certificate. The
webhooks' failurePolicy is Fail, so the chart never renders them without a
certificate the API server can trust: "self" (the operator provisions it),
"cert-manager", or "external" with webhook.caBundle for a Secret the user
provides. Rendering fails otherwise, naming the values to set.
*/}}
{{- define "profilesync.checkWebhookCertificate" -}}
{{- if and .Values.webhook.enabled (eq .Values.webhook.certProvisioning "external") (not .Values.webhook.caBundle) -}}
{{- fail "webhook.enabled is true and webhook.certProvisioning is external, but webhook.caBundle is empty: the API server could not trust the webhook's certificate, and its failurePolicy Fail would refuse every CloudProfile write. Set webhook.caBundle (base64 PEM) and create the Secret webhook.certSecretName, set webhook.certProvisioning to self or cert-manager, or set webhook.enabled=false (docs/helm.md#admission-webhooks)" -}}
{{- end -}}
{{- if and .Values.webhook.caBundle (ne .Values.webhook.certProvisioning "external") -}}
{{- fail (printf "webhook.caBundle is set, but webhook.certProvisioning is %s, which puts its own CA into the webhook configuration: set webhook.certProvisioning=external to use your certificate (docs/helm.md#admission-webhooks)" .Values.webhook.certProvisioning) -}}
{{- end -}}
{{- end -}}
