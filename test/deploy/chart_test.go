package deploy

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
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
// labels and annotations and the Namespace, which `helm install
// --create-namespace` creates unless namespace.create is set. It catches any
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
}

// TestChartGrantsTheSameRBACAsConfigDefault: whatever the values for the
// image, the limits, tenancy, sharding, admission and monitoring, the chart's
// ServiceAccount, roles and bindings are config/default's.
func TestChartGrantsTheSameRBACAsConfigDefault(t *testing.T) {
	rbacKinds := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
	onlyRBAC := func(objects []*unstructured.Unstructured) []*unstructured.Unstructured {
		return slices.DeleteFunc(slices.Clone(objects), func(obj *unstructured.Unstructured) bool {
			return !slices.Contains(rbacKinds, obj.GetKind())
		})
	}
	config := onlyRBAC(buildDefault(t))
	NewWithT(t).Expect(config).To(HaveLen(12), "config/default's ServiceAccount, 7 ClusterRoles, 2 ClusterRoleBindings, a Role and a RoleBinding")
	for _, set := range [][]string{
		nil,
		{"webhook.enabled=false"},
		{"webhook.certManager.enabled=false", "webhook.caBundle=Q0E="},
		{"metrics.serviceMonitor.enabled=true", "tenancy.defaultServiceAccount=", "sharding.watchLabelSelector=shard=a"},
		{"crds.install=false", "limits.maxObjects=5000", "image.tag=v1"},
	} {
		t.Run(strings.Join(append([]string{"--set"}, set...), " "), func(t *testing.T) {
			compareObjects(t, onlyRBAC(renderChart(t, set...)), config, "config/default")
		})
	}
}

// TestChartServiceMonitorMatchesConfigPrometheus: with
// metrics.serviceMonitor.enabled the chart scrapes the metrics Service as
// config/prometheus's ServiceMonitor does.
func TestChartServiceMonitorMatchesConfigPrometheus(t *testing.T) {
	g := NewWithT(t)
	g.Expect(slices.ContainsFunc(renderChart(t), func(o *unstructured.Unstructured) bool { return o.GetKind() == "ServiceMonitor" })).
		To(BeFalse(), "off by default: it needs the Prometheus Operator's CRDs")
	chart := renderChart(t, "metrics.serviceMonitor.enabled=true")
	config := buildConfig(t, "prometheus")
	compareObjects(t, withKinds(chart, "ServiceMonitor"), withKinds(config, "ServiceMonitor"), "config/prometheus")

	labelled := onlyObject(t, renderChart(t, "metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prometheus"), "ServiceMonitor")
	g.Expect(labelled.GetLabels()).To(HaveKeyWithValue("release", "prometheus"))
}

func withKinds(objects []*unstructured.Unstructured, kinds ...string) []*unstructured.Unstructured {
	return slices.DeleteFunc(slices.Clone(objects), func(obj *unstructured.Unstructured) bool {
		return !slices.Contains(kinds, obj.GetKind())
	})
}
