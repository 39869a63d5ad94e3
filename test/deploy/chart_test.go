package deploy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/profilesync/profilesync/internal/cli"
)

// chartReleaseName is the release name under which the chart names its
// objects as config/default does (prefix profilesync-): `helm install
// profilesync charts/profilesync -n profilesync-system`, as docs/helm.md has it.
const chartReleaseName = "profilesync"

var chartDir = filepath.Join("..", "..", "charts", "profilesync")

// The documented differences between the chart and config/default
// (docs/helm.md#how-the-chart-differs-from-configdefault). The comparison
// ignores these and nothing else.
var (
	// chartOnlyLabels are Helm's conventional labels; config/ has
	// managed-by: kustomize where the chart has managed-by: Helm.
	chartOnlyLabels = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}
	// chartOnlyAnnotations: crds.keep leaves the CRDs, and so every
	// profile, in place on `helm uninstall`.
	chartOnlyAnnotations = []string{"helm.sh/resource-policy"}
)

// renderChart renders the chart with Helm's own loader and template engine,
// as `helm template profilesync charts/profilesync -n profilesync-system
// --set ...` does, and returns its objects.
func renderChart(t *testing.T, set ...string) []*unstructured.Unstructured {
	t.Helper()
	objects, err := renderChartValues(set...)
	if err != nil {
		t.Fatalf("helm template --set %s: %v", strings.Join(set, ","), err)
	}
	return objects
}

func renderChartValues(set ...string) ([]*unstructured.Unstructured, error) {
	chart, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load the chart: %w", err)
	}
	return renderLoadedChart(chart, set...)
}

// renderLoadedChart renders a chart already loaded, perhaps changed in memory.
func renderLoadedChart(chart *helmchart.Chart, set ...string) ([]*unstructured.Unstructured, error) {
	values := map[string]any{}
	for _, s := range set {
		if err := strvals.ParseInto(s, values); err != nil {
			return nil, fmt.Errorf("--set %s: %w", s, err)
		}
	}
	renderValues, err := chartutil.ToRenderValues(chart, values, chartutil.ReleaseOptions{
		Name: chartReleaseName, Namespace: operatorNamespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	files, err := engine.Render(chart, renderValues)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var objects []*unstructured.Unstructured
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, _helpers.tpl
		}
		manifests := releaseutil.SplitManifests(files[name])
		keys := make([]string, 0, len(manifests))
		for k := range manifests {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			data, err := yaml.YAMLToJSON([]byte(manifests[k]))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if string(data) == "null" {
				continue // only comments
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(data); err != nil {
				return nil, fmt.Errorf("%s: %w\n%s", name, err, manifests[k])
			}
			objects = append(objects, obj)
		}
	}
	return objects, nil
}

// objectKey names an object by group, kind, namespace and name.
func objectKey(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	return fmt.Sprintf("%s %s/%s", gvk.GroupKind(), obj.GetNamespace(), obj.GetName())
}

// withoutChartOnlyMetadata returns obj without the labels and annotations
// the chart adds by design.
func withoutChartOnlyMetadata(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj = obj.DeepCopy()
	labels := obj.GetLabels()
	for _, key := range chartOnlyLabels {
		delete(labels, key)
	}
	if len(labels) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", "labels")
	} else {
		obj.SetLabels(labels)
	}
	annotations := obj.GetAnnotations()
	for _, key := range chartOnlyAnnotations {
		delete(annotations, key)
	}
	if len(annotations) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations")
	} else {
		obj.SetAnnotations(annotations)
	}
	return obj
}

// byKey indexes objects by objectKey, failing on a duplicate.
func byKey(t *testing.T, what string, objects []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	index := map[string]*unstructured.Unstructured{}
	for _, obj := range objects {
		key := objectKey(obj)
		if _, ok := index[key]; ok {
			t.Fatalf("%s has %s twice", what, key)
		}
		index[key] = withoutChartOnlyMetadata(obj)
	}
	return index
}

// compareObjects fails for every object that only one side has and every
// object the two sides render differently, after the chart-only metadata.
func compareObjects(t *testing.T, chartObjects, configObjects []*unstructured.Unstructured, configName string) {
	t.Helper()
	chart := byKey(t, "the chart", chartObjects)
	config := byKey(t, configName, configObjects)
	var keys []string
	for key := range chart {
		keys = append(keys, key)
	}
	for key := range config {
		if _, ok := chart[key]; !ok {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		fromChart, inChart := chart[key]
		fromConfig, inConfig := config[key]
		switch {
		case !inChart:
			t.Errorf("%s has %s, the chart does not", configName, key)
		case !inConfig:
			t.Errorf("the chart has %s, %s does not", key, configName)
		default:
			if diff := cmp.Diff(fromConfig.Object, fromChart.Object); diff != "" {
				t.Errorf("%s differs between %s and the chart (-%s +chart):\n%s", key, configName, configName, diff)
			}
		}
	}
}

// withoutKinds returns objects without those of the given kinds.
func withoutKinds(objects []*unstructured.Unstructured, kinds ...string) []*unstructured.Unstructured {
	return slices.DeleteFunc(slices.Clone(objects), func(obj *unstructured.Unstructured) bool {
		return slices.Contains(kinds, obj.GetKind())
	})
}

// TestChartRendersWhatConfigDefaultBuilds: the chart, rendered by Helm's
// engine with its default values, holds exactly the objects of `kustomize
// build config/default`, field for field, but for the documented chart-only
// labels and annotations and the Namespace, which `helm install` needs
// before it installs (rendered only with namespace.create). It catches any
// drift between the two, in either direction: a changed flag, role or
// webhook in config/ that the chart lacks, and the reverse.
func TestChartRendersWhatConfigDefaultBuilds(t *testing.T) {
	config := buildDefault(t)
	t.Run("default values: everything but the Namespace", func(t *testing.T) {
		chart := renderChart(t)
		g := NewWithT(t)
		g.Expect(slices.ContainsFunc(chart, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Namespace" })).
			To(BeFalse(), "namespace.create is off by default")
		compareObjects(t, chart, withoutKinds(config, "Namespace"), "config/default")
	})
	t.Run("namespace.create renders config/manager's Namespace", func(t *testing.T) {
		compareObjects(t, renderChart(t, "namespace.create=true"), config, "config/default")
	})
	t.Run("webhook.certProvisioning=cert-manager renders config/default-certmanager", func(t *testing.T) {
		certManager := buildConfig(t, "default-certmanager")
		NewWithT(t).Expect(hasKind(certManager, "Certificate")).To(BeTrue(), "config/default-certmanager has cert-manager's Certificate")
		compareObjects(t, renderChart(t, "webhook.certProvisioning=cert-manager"), withoutKinds(certManager, "Namespace"), "config/default-certmanager")
	})
}

// TestChartGrantsTheSameRBACAsConfigDefault: whatever the values for the
// image, the limits, tenancy, sharding, admission and monitoring, the chart's
// ServiceAccount, roles and bindings are those of the config/ of its
// admission mode: config/default's where the operator provisions the
// webhook's certificate (the Role on its Secret included), and
// config/default-certmanager's, without that Role, where it does not
// (cert-manager, a certificate of one's own, or no webhooks).
func TestChartGrantsTheSameRBACAsConfigDefault(t *testing.T) {
	rbacKinds := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
	onlyRBAC := func(objects []*unstructured.Unstructured) []*unstructured.Unstructured {
		return slices.DeleteFunc(slices.Clone(objects), func(obj *unstructured.Unstructured) bool {
			return !slices.Contains(rbacKinds, obj.GetKind())
		})
	}
	selfProvisioned := onlyRBAC(buildDefault(t))
	for _, kind := range rbacKinds {
		NewWithT(t).Expect(hasKind(selfProvisioned, kind)).To(BeTrue(), "config/default has a %s", kind)
	}
	certManager := onlyRBAC(buildConfig(t, "default-certmanager"))
	// The modes' RBAC differs, so comparing with the wrong one fails.
	NewWithT(t).Expect(len(certManager)).To(BeNumerically("<", len(selfProvisioned)),
		"config/default-certmanager leaves out config/default's Role on the certificate's Secret")
	for _, tc := range []struct {
		set        []string
		configName string
		config     []*unstructured.Unstructured
	}{
		{nil, "config/default", selfProvisioned},
		{[]string{"webhook.certProvisioning=self", "webhook.certSecretName=profilesync-webhook-server-cert"}, "config/default", selfProvisioned},
		{[]string{"webhook.certProvisioning=cert-manager"}, "config/default-certmanager", certManager},
		{[]string{"webhook.certProvisioning=external", "webhook.caBundle=Q0E="}, "config/default-certmanager", certManager},
		{[]string{"webhook.enabled=false"}, "config/default-certmanager", certManager},
		{[]string{"metrics.serviceMonitor.enabled=true", "tenancy.defaultServiceAccount=", "sharding.watchLabelSelector=shard=a"}, "config/default", selfProvisioned},
		{[]string{"crds.install=false", "limits.maxObjects=5000", "image.tag=v1"}, "config/default", selfProvisioned},
		{[]string{"webhook.certProvisioning=cert-manager", "metrics.serviceMonitor.enabled=true", "crds.install=false"}, "config/default-certmanager", certManager},
	} {
		t.Run(strings.Join(append([]string{"--set"}, tc.set...), " "), func(t *testing.T) {
			compareObjects(t, onlyRBAC(renderChart(t, tc.set...)), tc.config, tc.configName)
		})
	}
}

// TestChartMonitoringMatchesConfigPrometheus: with
// metrics.serviceMonitor.enabled and metrics.prometheusRule.enabled the chart
// (and metrics.grafanaDashboard.enabled) the chart renders every object of
// config/prometheus: the ServiceMonitor that scrapes the metrics Service, the
// alerts, and the Grafana dashboard's ConfigMap.
func TestChartMonitoringMatchesConfigPrometheus(t *testing.T) {
	g := NewWithT(t)
	defaults := renderChart(t)
	g.Expect(hasKind(defaults, "ServiceMonitor")).To(BeFalse(), "off by default: it needs the Prometheus Operator's CRDs")
	g.Expect(hasKind(defaults, "PrometheusRule")).To(BeFalse(), "off by default: it needs the Prometheus Operator's CRDs")
	g.Expect(hasKind(defaults, "ConfigMap")).To(BeFalse(), "the dashboard is off by default")
	chart := renderChart(t, "metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true", "metrics.grafanaDashboard.enabled=true")
	compareObjects(t, withKinds(chart, "ServiceMonitor", "PrometheusRule", "ConfigMap"), buildConfig(t, "prometheus"), "config/prometheus")

	labelled := renderChart(t, "metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prometheus",
		"metrics.prometheusRule.enabled=true", "metrics.prometheusRule.labels.release=prometheus-rules")
	g.Expect(onlyObject(t, labelled, "ServiceMonitor").GetLabels()).To(HaveKeyWithValue("release", "prometheus"))
	g.Expect(onlyObject(t, labelled, "PrometheusRule").GetLabels()).To(HaveKeyWithValue("release", "prometheus-rules"))
}

func withKinds(objects []*unstructured.Unstructured, kinds ...string) []*unstructured.Unstructured {
	return slices.DeleteFunc(slices.Clone(objects), func(obj *unstructured.Unstructured) bool {
		return !slices.Contains(kinds, obj.GetKind())
	})
}

// managerContainer returns the manager's container of the rendered Deployment.
func managerContainer(t *testing.T, objects []*unstructured.Unstructured) corev1.Container {
	t.Helper()
	deployment := decode[appsv1.Deployment](t, onlyObject(t, objects, "Deployment"))
	if len(deployment.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(deployment.Spec.Template.Spec.Containers))
	}
	return deployment.Spec.Template.Spec.Containers[0]
}

func hasKind(objects []*unstructured.Unstructured, kind string) bool {
	return slices.ContainsFunc(objects, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind })
}

// TestChartValuesReachTheManager: each value docs/helm.md describes changes
// the rendered objects as it says, and nothing else of the Deployment's
// arguments than its own flag.
func TestChartValuesReachTheManager(t *testing.T) {
	defaultArgs := managerContainer(t, renderChart(t)).Args
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		set  []string
		// addedArgs and removedArgs are the manager's arguments that differ
		// from the default values'.
		addedArgs, removedArgs []string
		// addedLast: addedArgs are the last arguments, so they override.
		addedLast bool
		check     func(g Gomega, objects []*unstructured.Unstructured, manager corev1.Container)
	}{{
		name: "the image a user built and pushed",
		set:  []string{"image.repository=registry.example:5000/team/profilesync", "image.tag=v1.2.3", "image.pullPolicy=Always"},
		check: func(g Gomega, _ []*unstructured.Unstructured, manager corev1.Container) {
			g.Expect(manager.Image).To(Equal("registry.example:5000/team/profilesync:v1.2.3"))
			g.Expect(manager.ImagePullPolicy).To(Equal(corev1.PullAlways))
		},
	}, {
		name: "a tag that --set reads as a number",
		set:  []string{"image.tag=2"},
		check: func(g Gomega, _ []*unstructured.Unstructured, manager corev1.Container) {
			g.Expect(manager.Image).To(Equal("ghcr.io/profilesync/profilesync:2"))
		},
	}, {
		name: "a digest pins the image over the tag",
		set:  []string{"image.repository=registry.example/profilesync", "image.tag=v1", "image.digest=" + digest},
		check: func(g Gomega, _ []*unstructured.Unstructured, manager corev1.Container) {
			g.Expect(manager.Image).To(Equal("registry.example/profilesync@" + digest))
		},
	}, {
		name: "resources for larger builds",
		set:  []string{"resources.limits.memory=6Gi", "resources.requests.cpu=200m"},
		check: func(g Gomega, _ []*unstructured.Unstructured, manager corev1.Container) {
			g.Expect(manager.Resources.Limits.Memory().String()).To(Equal("6Gi"))
			g.Expect(manager.Resources.Requests.Cpu().String()).To(Equal("200m"))
			g.Expect(manager.Resources.Requests.Memory().String()).To(Equal("256Mi"), "the other defaults stay")
		},
	}, {
		name:        "lockdown off: tenants without a ServiceAccount write as the operator",
		set:         []string{"tenancy.defaultServiceAccount="},
		removedArgs: []string{"--default-service-account=default"},
	}, {
		name:        "lockdown with another ServiceAccount and the landscape operators' namespace",
		set:         []string{"tenancy.defaultServiceAccount=profiles-sync", "tenancy.clusterProfilesNamespace=landscapes"},
		addedArgs:   []string{"--default-service-account=profiles-sync", "--cluster-profiles-namespace=landscapes"},
		removedArgs: []string{"--default-service-account=default"},
	}, {
		name: "every limit",
		set: []string{"limits.maxConcurrentBuilds=4", "limits.buildMemoryLimit=2Gi", "limits.decodedCacheSize=256Mi",
			"limits.memoryBudget=12Gi", "limits.maxObjects=3000", "limits.maxFileSize=8Mi", "limits.maxRenderedSize=64Mi",
			"limits.maxCheckoutSize=256Mi", "limits.buildCPULimit=2m"},
		addedArgs: []string{"--max-concurrent-builds=4", "--build-memory-limit=2Gi", "--decoded-cache-size=256Mi",
			"--memory-budget=12Gi", "--max-objects=3000", "--max-file-size=8Mi", "--max-rendered-size=64Mi",
			"--max-checkout-size=256Mi", "--build-cpu-limit=2m"},
		removedArgs: []string{"--max-concurrent-builds=2", "--build-memory-limit=1Gi", "--decoded-cache-size=128Mi"},
	}, {
		name:      "a shard watches only its ProfileSyncs",
		set:       []string{`sharding.watchLabelSelector=sharding.profilesync.io/key in (shard1\,shard2)`},
		addedArgs: []string{"--watch-label-selector=sharding.profilesync.io/key in (shard1,shard2)"},
	}, {
		name:        "admission off: no webhooks, no certificate, no flag",
		set:         []string{"webhook.enabled=false"},
		removedArgs: []string{"--enable-admission", "--webhook-cert-provisioning=self"},
		check: func(g Gomega, objects []*unstructured.Unstructured, manager corev1.Container) {
			for _, kind := range []string{"ValidatingWebhookConfiguration", "Certificate", "Issuer", "Secret"} {
				g.Expect(hasKind(objects, kind)).To(BeFalse(), "no %s", kind)
			}
			g.Expect(slices.ContainsFunc(objects, func(o *unstructured.Unstructured) bool {
				return o.GetName() == "profilesync-webhook-service"
			})).To(BeFalse(), "no webhook Service")
			g.Expect(manager.Ports).NotTo(ContainElement(HaveField("ContainerPort", BeEquivalentTo(9443))))
			g.Expect(manager.VolumeMounts).NotTo(ContainElement(HaveField("MountPath", "/tmp/k8s-webhook-server/serving-certs")))
		},
	}, {
		name:        "admission with a certificate of one's own",
		set:         []string{"webhook.certProvisioning=external", "webhook.caBundle=Q0E=", "webhook.certSecretName=my-webhook-cert"},
		addedArgs:   []string{"--webhook-cert-provisioning=external"},
		removedArgs: []string{"--webhook-cert-provisioning=self"},
		check: func(g Gomega, objects []*unstructured.Unstructured, manager corev1.Container) {
			g.Expect(manager.Args[0]).To(Equal("--webhook-cert-provisioning=external"), "first, as config/default-certmanager has it")
			g.Expect(hasKind(objects, "Certificate")).To(BeFalse())
			g.Expect(hasKind(objects, "Issuer")).To(BeFalse())
			g.Expect(hasKind(objects, "Secret")).To(BeFalse(), "the user creates the Secret")
			g.Expect(manager.VolumeMounts).To(ContainElement(HaveField("MountPath", "/tmp/k8s-webhook-server/serving-certs")))
			webhooks := onlyObject(t, objects, "ValidatingWebhookConfiguration")
			g.Expect(webhooks.GetAnnotations()).NotTo(HaveKey("cert-manager.io/inject-ca-from"))
			hooks, _, _ := unstructured.NestedSlice(webhooks.Object, "webhooks")
			g.Expect(hooks).To(HaveLen(2))
			for _, hook := range hooks {
				caBundle, _, _ := unstructured.NestedString(hook.(map[string]any), "clientConfig", "caBundle")
				g.Expect(caBundle).To(Equal("Q0E="))
			}
			deployment := decode[appsv1.Deployment](t, findObject(t, objects, "Deployment", deploymentName))
			g.Expect(deployment.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", "my-webhook-cert")))
		},
	}, {
		name: "admission with the operator's certificate in a Secret of another name, for more DNS names",
		set: []string{"webhook.certSecretName=my-webhook-cert", "webhook.certDNSNames[0]=profilesync.example",
			"webhook.certDNSNames[1]=webhook.profilesync.example"},
		addedArgs: []string{"--webhook-cert-secret=my-webhook-cert", "--webhook-cert-dns-names=profilesync.example,webhook.profilesync.example"},
		check: func(g Gomega, objects []*unstructured.Unstructured, manager corev1.Container) {
			g.Expect(manager.Args[0]).To(Equal("--webhook-cert-provisioning=self"), "first, as config/default has it")
			g.Expect(findObject(t, objects, "Secret", "my-webhook-cert").Object).NotTo(HaveKey("data"), "shipped empty")
			role := findObject(t, objects, "Role", managerRoleName)
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			g.Expect(rules).To(ContainElement(HaveKeyWithValue("resourceNames", ConsistOf("my-webhook-cert"))),
				"the operator may update the Secret it keeps the certificate in")
			g.Expect(manager.VolumeMounts).NotTo(ContainElement(HaveField("Name", "webhook-cert")), "the operator writes the certificate itself")
		},
	}, {
		name:        "admission with cert-manager's certificate",
		set:         []string{"webhook.certProvisioning=cert-manager"},
		addedArgs:   []string{"--webhook-cert-provisioning=external"},
		removedArgs: []string{"--webhook-cert-provisioning=self"},
		check: func(g Gomega, objects []*unstructured.Unstructured, _ corev1.Container) {
			g.Expect(hasKind(objects, "Secret")).To(BeFalse(), "cert-manager creates the Secret")
			g.Expect(findObject(t, objects, "Certificate", "profilesync-serving-cert").Object).
				To(HaveKeyWithValue("spec", HaveKeyWithValue("secretName", "profilesync-webhook-server-cert")))
		},
	}, {
		name: "the CRDs left to the user, and kept or not on uninstall",
		set:  []string{"crds.install=false"},
		check: func(g Gomega, objects []*unstructured.Unstructured, _ corev1.Container) {
			g.Expect(hasKind(objects, "CustomResourceDefinition")).To(BeFalse())
		},
	}, {
		name: "CRDs deleted with the release",
		set:  []string{"crds.keep=false"},
		check: func(g Gomega, objects []*unstructured.Unstructured, _ corev1.Container) {
			for _, obj := range objects {
				if obj.GetKind() == "CustomResourceDefinition" {
					g.Expect(obj.GetAnnotations()).NotTo(HaveKey("helm.sh/resource-policy"), obj.GetName())
				}
			}
		},
	}, {
		name: "no sample roles for people",
		set:  []string{"rbac.userRoles=false"},
		check: func(g Gomega, objects []*unstructured.Unstructured, _ corev1.Container) {
			var roles []string
			for _, obj := range objects {
				if obj.GetKind() == "ClusterRole" {
					roles = append(roles, obj.GetName())
				}
			}
			g.Expect(roles).To(ConsistOf(managerRoleName, metricsAuthRoleName, metricsReaderRoleName))
		},
	}, {
		name: "scheduling, pull secrets and pod annotations",
		set: []string{"nodeSelector.pool=system", "tolerations[0].key=dedicated", "tolerations[0].operator=Exists",
			"imagePullSecrets[0].name=regcred", "podAnnotations.team=platform", "replicas=2"},
		check: func(g Gomega, objects []*unstructured.Unstructured, _ corev1.Container) {
			deployment := decode[appsv1.Deployment](t, onlyObject(t, objects, "Deployment"))
			pod := deployment.Spec.Template
			g.Expect(*deployment.Spec.Replicas).To(BeEquivalentTo(2))
			g.Expect(pod.Spec.NodeSelector).To(Equal(map[string]string{"pool": "system"}))
			g.Expect(pod.Spec.Tolerations).To(ConsistOf(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}))
			g.Expect(pod.Spec.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: "regcred"}))
			g.Expect(pod.Annotations).To(HaveKeyWithValue("team", "platform"))
			g.Expect(pod.Annotations).To(HaveKeyWithValue("kubectl.kubernetes.io/default-container", "manager"))
		},
	}, {
		name:      "extra arguments come last",
		set:       []string{"extraArgs={--concurrent=8,--max-hold=72h}"},
		addedArgs: []string{"--concurrent=8", "--max-hold=72h"},
		addedLast: true,
	}, {
		name: "a release of another name names every object after it",
		set:  []string{"fullnameOverride=ps"},
		// The operator provisions the certificate into the objects of
		// these names (TestChartNamesTheManagersCertificateObjects).
		addedArgs: []string{"--webhook-cert-secret=ps-webhook-server-cert", "--webhook-service=ps-webhook-service",
			"--webhook-configuration=ps-validating-webhook-configuration"},
		check: func(g Gomega, objects []*unstructured.Unstructured, _ corev1.Container) {
			for _, obj := range objects {
				if obj.GetKind() != "CustomResourceDefinition" {
					g.Expect(obj.GetName()).To(HavePrefix("ps-"), objectKey(obj))
				}
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			objects := renderChart(t, tc.set...)
			manager := managerContainer(t, objects)
			want := slices.DeleteFunc(slices.Clone(defaultArgs), func(arg string) bool { return slices.Contains(tc.removedArgs, arg) })
			g.Expect(manager.Args).To(ConsistOf(append(want, tc.addedArgs...)), "the manager's arguments")
			if tc.addedLast {
				g.Expect(manager.Args[len(manager.Args)-len(tc.addedArgs):]).To(Equal(tc.addedArgs), "the added arguments come last")
			}
			if tc.check != nil {
				tc.check(g, objects, manager)
			}
		})
	}
}

// TestChartArgumentsAreFlagsOfTheManager: every argument the chart can
// render, with every value set, is a flag `profilesync manager` accepts with
// a value it parses, so a typo in the chart fails here, not in a
// crash-looping pod.
func TestChartArgumentsAreFlagsOfTheManager(t *testing.T) {
	for _, set := range [][]string{nil, {
		"tenancy.clusterProfilesNamespace=landscapes", "limits.memoryBudget=12Gi", "limits.maxObjects=3000",
		"limits.maxFileSize=8Mi", "limits.maxRenderedSize=64Mi", "limits.maxCheckoutSize=256Mi", "limits.buildCPULimit=2m",
		"sharding.watchLabelSelector=sharding.profilesync.io/key=shard1",
		"fullnameOverride=ps", "webhook.certDNSNames[0]=profilesync.example",
	}, {"webhook.certProvisioning=cert-manager"}, {"webhook.certProvisioning=external", "webhook.caBundle=Q0E="}} {
		g := NewWithT(t)
		args := managerContainer(t, renderChart(t, set...)).Args
		manager, _, err := cli.NewRootCommand(nil, nil, nil).Find([]string{"manager"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(manager.Name()).To(Equal("manager"))
		g.Expect(manager.ParseFlags(args)).To(Succeed(), "profilesync manager %s", strings.Join(args, " "))
		g.Expect(manager.Flags().Args()).To(BeEmpty(), "every argument is a flag")
	}
	// And a misspelt flag is refused, so the check above checks something.
	manager, _, _ := cli.NewRootCommand(nil, nil, nil).Find([]string{"manager"})
	NewWithT(t).Expect(manager.ParseFlags([]string{"--max-concurent-builds=2"})).NotTo(Succeed())
}

// TestChartRefusesWebhooksWithoutACertificate: the chart never renders the
// fail-closed webhook configuration without a certificate the API server
// can trust: with webhook.certProvisioning=external it needs the caBundle,
// and says so; self (the operator provisions it) and cert-manager need none
// from the user. A caBundle for another mode, which would never be used, is
// refused too.
func TestChartRefusesWebhooksWithoutACertificate(t *testing.T) {
	g := NewWithT(t)
	_, err := renderChartValues("webhook.certProvisioning=external")
	g.Expect(err).To(MatchError(And(ContainSubstring("webhook.caBundle is empty"), ContainSubstring("webhook.enabled=false"))))
	_, err = renderChartValues("webhook.certProvisioning=external", "webhook.enabled=false")
	g.Expect(err).NotTo(HaveOccurred(), "no webhooks need no certificate")
	_, err = renderChartValues("webhook.caBundle=Q0E=")
	g.Expect(err).To(MatchError(ContainSubstring("set webhook.certProvisioning=external")))

	for _, mode := range []string{"self", "cert-manager"} {
		objects, err := renderChartValues("webhook.certProvisioning=" + mode)
		g.Expect(err).NotTo(HaveOccurred(), "%s needs no caBundle", mode)
		manager := managerContainer(t, objects)
		g.Expect(manager.Args).To(ContainElement("--enable-admission"))
		if mode == "self" {
			// The operator provisions the certificate into this Secret and
			// the CA into the webhooks (internal/servingcert).
			g.Expect(manager.Args[0]).To(Equal("--webhook-cert-provisioning=self"))
			g.Expect(findObject(t, objects, "Secret", "profilesync-webhook-server-cert")).NotTo(BeNil())
		} else {
			g.Expect(findObject(t, objects, "Certificate", "profilesync-serving-cert")).NotTo(BeNil())
		}
	}
}

// TestChartRefusesRoleRulesOnObjectsItDoesNotName: the chart gives the
// generated rules' resourceNames the release's names, and a resourceName
// it does not know (a new +kubebuilder:rbac marker's) fails the render,
// naming it, rather than granting a right on an object the release does not
// have.
func TestChartRefusesRoleRulesOnObjectsItDoesNotName(t *testing.T) {
	g := NewWithT(t)
	chart, err := loader.Load(chartDir)
	g.Expect(err).NotTo(HaveOccurred())
	var changed bool
	for _, file := range chart.Files {
		if file.Name == "files/generated/role.yaml" {
			before := string(file.Data)
			file.Data = []byte(strings.Replace(before, "- webhook-server-cert", "- leader-lock", 1))
			changed = string(file.Data) != before
		}
	}
	g.Expect(changed).To(BeTrue(), "the chart's copy of role.yaml names the Secret webhook-server-cert")
	_, err = renderLoadedChart(chart)
	g.Expect(err).To(MatchError(And(ContainSubstring(`"leader-lock"`), ContainSubstring("files/generated/role.yaml"))))
}

// TestChartNamesTheManagersCertificateObjects: with
// webhook.certProvisioning=self the manager provisions the certificate into
// the Secret, for the Service and into the ValidatingWebhookConfiguration
// that its flags name, and those are the chart's objects, whether the chart
// leaves the flags at the manager's defaults (config/default's names) or
// sets them for another release name or Secret.
func TestChartNamesTheManagersCertificateObjects(t *testing.T) {
	for _, set := range [][]string{nil, {"fullnameOverride=ps"}, {"webhook.certSecretName=my-webhook-cert"}} {
		t.Run(strings.Join(append([]string{"--set"}, set...), " "), func(t *testing.T) {
			g := NewWithT(t)
			objects := renderChart(t, set...)
			manager, _, err := cli.NewRootCommand(nil, nil, nil).Find([]string{"manager"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(manager.ParseFlags(managerContainer(t, objects).Args)).To(Succeed())
			for flag, kind := range map[string]string{
				"webhook-cert-secret":   "Secret",
				"webhook-service":       "Service",
				"webhook-configuration": "ValidatingWebhookConfiguration",
			} {
				name := manager.Flags().Lookup(flag).Value.String()
				g.Expect(findObject(t, objects, kind, name)).NotTo(BeNil(), "--%s=%s names the chart's %s", flag, name, kind)
			}
		})
	}
}

// selfSignedCABundle returns a CA certificate, PEM and base64, as a user
// without cert-manager gives it in webhook.caBundle.
func selfSignedCABundle(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "profilesync-webhook-ca"},
		NotBefore:             time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestChartIsAcceptedByTheAPIServer: every object the chart renders, in each
// admission mode (the operator's certificate, cert-manager's, a caBundle of
// one's own, none), passes a server-side dry-run
// apply on a real API server without warnings (the pod template holds to the
// restricted Pod Security Standard of the Namespace), but for cert-manager's
// kinds, whose CRDs the test API server does not have, as for config/default.
func TestChartIsAcceptedByTheAPIServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
	}{
		{"admission with the operator's certificate", []string{"namespace.create=true"}},
		{"admission with cert-manager", []string{"namespace.create=true", "webhook.certProvisioning=cert-manager"}},
		{"admission with a caBundle", []string{"namespace.create=true", "webhook.certProvisioning=external", "webhook.caBundle=" + selfSignedCABundle(t)}},
		{"admission off, every limit set, a shard", []string{"namespace.create=true", "webhook.enabled=false", "limits.maxObjects=3000",
			"limits.memoryBudget=3Gi", "sharding.watchLabelSelector=sharding.profilesync.io/key=shard1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			objects := renderChart(t, tc.set...)
			installPrerequisites(t, objects)
			c, warnings := clientWithWarnings(t)
			var applied []string
			for _, obj := range objects {
				gk := obj.GroupVersionKind().GroupKind()
				if slices.Contains(certManagerKinds, gk) {
					err := apply(ctx, c, obj, client.DryRunAll)
					g.Expect(meta.IsNoMatchError(err)).To(BeTrue(), "%s: only cert-manager's CRDs are missing, got %v", objectKey(obj), err)
					continue
				}
				g.Expect(apply(ctx, c, obj, client.DryRunAll)).To(Succeed(), "server-side dry-run apply of %s", objectKey(obj))
				g.Expect(warnings.take()).To(BeEmpty(), "API server warnings for %s", objectKey(obj))
				applied = append(applied, obj.GetKind())
			}
			g.Expect(applied).To(ContainElements("Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
				"ClusterRoleBinding", "Role", "RoleBinding", "Service", "Deployment"))
		})
	}
}

// chartValuePaths returns the dotted paths of the chart's values: a map with
// entries is walked into, anything else (a scalar, a list, an empty map) is
// one value.
func chartValuePaths(prefix string, values map[string]any) []string {
	var paths []string
	for key, value := range values {
		path := key
		if prefix != "" {
			path = prefix + "." + key
		}
		// resources is one value: its keys are Kubernetes', not the chart's.
		if nested, ok := value.(map[string]any); ok && len(nested) > 0 && path != "resources" {
			paths = append(paths, chartValuePaths(path, nested)...)
			continue
		}
		paths = append(paths, path)
	}
	sort.Strings(paths)
	return paths
}

// TestEveryChartValueIsDocumented: the values table of docs/helm.md has a row
// for every value of the chart's values.yaml, and none for a value it does
// not have.
func TestEveryChartValueIsDocumented(t *testing.T) {
	g := NewWithT(t)
	chart, err := loader.Load(chartDir)
	g.Expect(err).NotTo(HaveOccurred())
	values := chartValuePaths("", chart.Values)
	g.Expect(values).To(ContainElements("image.repository", "resources", "tenancy.defaultServiceAccount",
		"limits.maxObjects", "sharding.watchLabelSelector", "webhook.enabled", "metrics.serviceMonitor.enabled"))

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "helm.md"))
	g.Expect(err).NotTo(HaveOccurred())
	row := regexp.MustCompile("^\\| `([^`]+)` \\|")
	var documented []string
	for _, line := range strings.Split(string(doc), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			documented = append(documented, m[1])
		}
	}
	g.Expect(documented).To(ConsistOf(values), "docs/helm.md's values table, against charts/profilesync/values.yaml")
}

// TestChartRefusesValuesItDoesNotKnow: values.schema.json refuses a
// misspelt or mistyped value at `helm install`, naming it, rather than
// rendering the default silently.
func TestChartRefusesValuesItDoesNotKnow(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"webhook.enable=false", "enable"},
		{"limits.maxObject=3000", "maxObject"},
		{"replicas=two", "replicas"},
		{"image.pullPolicy=Sometimes", "pullPolicy"},
		{"webhook.enabled=no", "/webhook/enabled"},
		{"webhook.certProvisioning=selfsigned", "certProvisioning"},
		{"webhook.certManager.enabled=true", "certManager"},
		{"image.digest=v1", "digest"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, err := renderChartValues(tc.set)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

// TestChartPassesHelmLint: `helm lint --strict` (Helm's own linter, as a
// library) finds nothing above INFO in the chart, with its default values, with
// every optional part on, and in each admission mode.
func TestChartPassesHelmLint(t *testing.T) {
	for _, set := range [][]string{nil, {"metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true", "metrics.grafanaDashboard.enabled=true", "namespace.create=true"},
		{"webhook.certProvisioning=cert-manager"}, {"webhook.certProvisioning=external", "webhook.caBundle=Q0E="}} {
		values := map[string]any{}
		for _, s := range set {
			if err := strvals.ParseInto(s, values); err != nil {
				t.Fatal(err)
			}
		}
		linter := lint.All(chartDir, values, operatorNamespace, true)
		for _, message := range linter.Messages {
			if message.Severity > support.InfoSev {
				t.Errorf("helm lint --set %s: %s", strings.Join(set, ","), message)
			}
		}
		NewWithT(t).Expect(linter.Messages).NotTo(BeNil(), "the linter ran its rules")
	}
}

// TestChartCopiesOfConfigAreCurrent: the files the chart reads from
// files/generated are the config/ files `make manifests` copies there, byte
// for byte, so a change of config/ reaches the chart with `make manifests`
// (TestChartRendersWhatConfigDefaultBuilds shows what differs; this says
// which copy and what to run).
func TestChartCopiesOfConfigAreCurrent(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join("..", "..")
	generated := filepath.Join(chartDir, "files", "generated")
	copies := map[string]string{
		"role.yaml":              "config/rbac/role.yaml",
		"webhooks.yaml":          "config/webhook/manifests.yaml",
		"prometheusrule.yaml":    "config/prometheus/prometheusrule.yaml",
		"grafana-dashboard.json": "config/prometheus/grafana-dashboard.json",
	}
	for _, role := range []string{"role_project_admin.yaml", "role_landscape_operator.yaml", "role_on_call.yaml"} {
		copies[filepath.Join("user-roles", role)] = filepath.Join("config", "rbac", role)
	}
	crds, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crds).NotTo(BeEmpty())
	for _, crd := range crds {
		copies[filepath.Join("crds", filepath.Base(crd))] = filepath.Join("config", "crd", "bases", filepath.Base(crd))
	}
	var present []string
	g.Expect(filepath.WalkDir(generated, func(path string, entry os.DirEntry, err error) error {
		if err == nil && !entry.IsDir() {
			rel, _ := filepath.Rel(generated, path)
			present = append(present, rel)
		}
		return err
	})).To(Succeed())
	g.Expect(present).To(ConsistOf(slices.Collect(maps.Keys(copies))), "the files of %s are the copies `make manifests` makes", generated)
	for copied, source := range copies {
		want, err := os.ReadFile(filepath.Join(root, source))
		g.Expect(err).NotTo(HaveOccurred())
		got, err := os.ReadFile(filepath.Join(generated, copied))
		g.Expect(err).NotTo(HaveOccurred())
		// Not Equal: its message would print both CRDs whole.
		if string(got) != string(want) {
			t.Errorf("charts/profilesync/files/generated/%s differs from %s: run `make manifests`", copied, source)
		}
	}
}
