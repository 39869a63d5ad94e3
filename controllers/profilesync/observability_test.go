package profilesync

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"text/template"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/internal/receiver"
	"github.com/profilesync/profilesync/test/builders"
)

// The dashboard and the alerts a platform team runs the operator with
// (config/prometheus): every expression is parsed by Prometheus's own PromQL
// parser, and every metric it reads is one the operator registers, as the
// suite manager's SetupAll registers them.

// descriptions are what collectors describe, one line per metric, sorted.
func descriptions(collectors ...prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	var out []string
	for d := range ch {
		out = append(out, d.String())
	}
	sort.Strings(out)
	return out
}

// exportedMetrics are the names of the series the operator exports, each
// with its family: a family's own name, and for a histogram its _bucket,
// _sum and _count series. They are gathered from collectors made as
// SetupAll makes them, each made to report every metric it describes, and
// held against what SetupAll registered in the suite manager, so a metric
// added to the wiring is known here without a list to keep.
func exportedMetrics(t *testing.T) map[string]string {
	t.Helper()
	g := NewWithT(t)
	operatorMetrics := metrics.New(clocktesting.NewFakePassiveClock(builders.Time("2025-01-01T00:00:00Z")), RefusalReasons)
	reportEveryMetric(operatorMetrics)
	pushReceiver := receiver.NewMetrics()
	decoded := (&ProfileSyncReconciler{}).DecodedRevisionsCollector()
	// The VersionUpdate controller's, each reported once.
	proposals := metrics.NewProposals()
	update := types.NamespacedName{Namespace: "landscape", Name: "versions"}
	proposals.Proposed(update)
	proposals.SourceFailed(update, "kubernetes")
	registry := prometheus.NewPedanticRegistry()
	for _, c := range []prometheus.Collector{operatorMetrics, pushReceiver, decoded, proposals} {
		g.Expect(registry.Register(c)).To(Succeed())
	}
	described := descriptions(operatorMetrics, pushReceiver, decoded, proposals)
	g.Expect(described).To(Equal(descriptions(suiteRegistered.Collectors()...)),
		"the collectors here describe what SetupAll registers")

	families, err := registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(families).To(HaveLen(len(described)), "every metric described is gathered")
	problems, err := testutil.GatherAndLint(registry)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problems).To(BeEmpty())
	exported := map[string]string{}
	for _, f := range families {
		exported[f.GetName()] = f.GetName()
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[f.GetName()+suffix] = f.GetName()
			}
		}
	}
	return exported
}

// reportEveryMetric makes m report a series of every metric it describes.
func reportEveryMetric(m *metrics.Metrics) {
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Namespace: "landscape", Name: "dev"},
		Status: v1alpha1.ProfileSyncStatus{LastAppliedRevision: "main@sha1:0123", Holds: []v1alpha1.ObjectHold{{
			InventoryEntry: v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: "aws"},
			Until:          metav1.NewTime(builders.Time("2025-01-02T00:00:00Z")),
		}}},
	}
	timer := m.StartSync(sync)
	timer.Start(metrics.PhaseFetch)
	timer.Finish()
	m.AppliedRevision(sync)
	m.RefusedRevision(sync, v1alpha1.FetchFailedReason)
	m.Promoted(sync, v1alpha1.PromotedReason)
	m.ObserveWaiting(sync, "0123456789abcdef0123456789abcdef01234567")
	soak := time.Hour
	m.ObserveSoak(sync, &soak)
	m.ObserveRecordPush(sync, 1)
	m.ObserveRefusedHolds(sync, 1)
	m.ObserveDrift(sync, 1)
	m.ObserveProfile(v1alpha1.CloudProfileKind, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "aws"}},
		&v1alpha1.ProfileVersionsStatus{NextTransitionTime: builders.Date("2025-03-01T00:00:00Z")})
}

// metricNames are the metric names a PromQL expression reads, as
// Prometheus's own parser reads it: the name of every vector selector
// (bare, in a range, a subquery or a function's argument). A selector that
// names no metric (only label matchers, or a __name__ regular expression)
// is an error: nothing could check what it reads.
func metricNames(expr string) ([]string, error) {
	parsed, err := parser.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	err = inspectSelectors(parsed, func(selector *parser.VectorSelector) error {
		name := selector.Name
		for _, m := range selector.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			return fmt.Errorf("selector %s names no metric", selector)
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return nil
	})
	return names, err
}

func inspectSelectors(expr parser.Expr, visit func(*parser.VectorSelector) error) error {
	var failed error
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if selector, ok := node.(*parser.VectorSelector); ok && failed == nil {
			failed = visit(selector)
		}
		return nil
	})
	return failed
}

func TestMetricNamesAreTheSelectorsPrometheusParses(t *testing.T) {
	for _, row := range []struct {
		name    string
		expr    string
		want    []string
		wantErr string
	}{
		{"a bare selector", `profilesync_sync_ready == 0`, []string{"profilesync_sync_ready"}, ""},
		{"both sides of a set operation, not the names in its grouping",
			`max by (namespace, name) (profilesync_sync_ready{name!="x"}) == 0 unless on (namespace, name) profilesync_sync_suspended == 1`,
			[]string{"profilesync_sync_ready", "profilesync_sync_suspended"}, ""},
		{"a range inside a function", `increase(profilesync_sync_revisions_refused_total[10m]) > 0`, []string{"profilesync_sync_revisions_refused_total"}, ""},
		{"an offset and a number in exponent form",
			`time() - profilesync_profile_next_transition_timestamp_seconds offset 5m > 1e3`, []string{"profilesync_profile_next_transition_timestamp_seconds"}, ""},
		{"a histogram's buckets, not a label value that looks like a metric",
			`histogram_quantile(0.9, sum by (le) (rate(x_bucket{a="profilesync_not_read"}[5m])))`, []string{"x_bucket"}, ""},
		{"a subquery", `max_over_time(profilesync_drifted_objects[1h:5m])`, []string{"profilesync_drifted_objects"}, ""},
		{"a name given as __name__", `{__name__="profilesync_held_objects", namespace="a"}`, []string{"profilesync_held_objects"}, ""},
		{"a selector of no metric", `{namespace="a"}`, nil, "names no metric"},
		{"a __name__ pattern", `{__name__=~"profilesync_.*"}`, nil, "names no metric"},
		{"an expression Prometheus refuses", `sum by (namespace) profilesync_sync_ready`, nil, "unexpected identifier"},
		{"a comparison without a right side", `profilesync_sync_ready ==`, nil, "unexpected end of input"},
	} {
		t.Run(row.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := metricNames(row.expr)
			if row.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(row.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(row.want))
		})
	}
}

// prometheusRule is the part of config/prometheus/prometheusrule.yaml the
// tests read.
type prometheusRule struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   json.RawMessage `json:"metadata"`
	Spec       struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Record      string            `json:"record"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// runbookBase is where the alerts' runbook_url points: docs/runbooks.md of
// the repository, one section per alert (doc_references_test.go checks the
// section exists).
const runbookBase = "https://github.com/profilesync/profilesync/blob/main/docs/runbooks.md#"

// TestAlertsParseAndReadOnlyMetricsTheOperatorExports: every rule of the
// shipped PrometheusRule is an alert that Prometheus parses, that reads
// only metrics the operator exports, and that links its runbook.
func TestAlertsParseAndReadOnlyMetricsTheOperatorExports(t *testing.T) {
	g := NewWithT(t)
	exported := exportedMetrics(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "prometheus", "prometheusrule.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var rule prometheusRule
	g.Expect(yaml.UnmarshalStrict(data, &rule)).To(Succeed())
	var alerts []string
	for _, group := range rule.Spec.Groups {
		for _, r := range group.Rules {
			g.Expect(r.Alert).NotTo(BeEmpty(), "every rule of %s is an alert", group.Name)
			alerts = append(alerts, r.Alert)
			names, err := metricNames(r.Expr)
			g.Expect(err).NotTo(HaveOccurred(), "the expression of %s", r.Alert)
			g.Expect(names).NotTo(BeEmpty(), "%s reads a metric", r.Alert)
			for _, name := range names {
				g.Expect(exported).To(HaveKey(name), "%s reads %s, which the operator does not export", r.Alert, name)
			}
			if r.For != "" {
				_, err := model.ParseDuration(r.For)
				g.Expect(err).NotTo(HaveOccurred(), "the for of %s", r.Alert)
			}
			g.Expect(r.Labels).To(HaveKey("severity"), r.Alert)
			g.Expect(r.Annotations).To(HaveKey("summary"), r.Alert)
			for name, text := range r.Annotations {
				g.Expect(parseAlertTemplate(text)).To(Succeed(), "annotation %s of %s", name, r.Alert)
			}
			g.Expect(r.Annotations).To(HaveKeyWithValue("runbook_url", runbookBase+strings.ToLower(r.Alert)),
				"%s links its section of docs/runbooks.md", r.Alert)
		}
	}
	g.Expect(alerts).To(ConsistOf(
		"ProfileSyncNotReady", "ProfileSyncRevisionRefused", "ProfileTransitionOverdue", "ProfileHoldExpiresWhileGitDiffers",
		"ProfileSyncRolloutStuck", "ProfileSyncRecordNotPushed", "ProfileSyncDriftLeftInPlace", "ProfileHoldRefused"))

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, family := range exported {
		g.Expect(string(doc)).To(ContainSubstring("`"+family+"`"), "docs/metrics.md describes %s", family)
	}
	for _, alert := range alerts {
		g.Expect(string(doc)).To(ContainSubstring("`"+alert+"`"), "docs/metrics.md describes the alert %s", alert)
	}
}

// parseAlertTemplate parses an annotation as Prometheus parses it: a Go
// template with $labels and $value defined, and Prometheus's functions; a
// stray brace or an unknown variable fails here rather than in the alert.
func parseAlertTemplate(text string) error {
	noop := func(any) string { return "" }
	funcs := template.FuncMap{"humanize": noop, "humanizeDuration": noop, "humanizePercentage": noop, "humanizeTimestamp": noop, "title": noop, "toUpper": noop}
	_, err := template.New("annotation").Funcs(funcs).Parse(`{{$labels := .Labels}}{{$value := .Value}}` + text)
	return err
}

// grafanaDashboard is the part of a Grafana dashboard's JSON the tests
// read.
type grafanaDashboard struct {
	UID        string         `json:"uid"`
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	Title      string             `json:"title"`
	Type       string             `json:"type"`
	Datasource *grafanaDatasource `json:"datasource"`
	Targets    []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	// Panels are a collapsed row's panels.
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaVariable struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	AllValue string `json:"allValue"`
	// Query is a string or an object whose query field is the string.
	Query json.RawMessage `json:"query"`
}

// query is the variable's query text.
func (v grafanaVariable) query() (string, error) {
	var text string
	if err := json.Unmarshal(v.Query, &text); err == nil {
		return text, nil
	}
	var object struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(v.Query, &object); err != nil {
		return "", fmt.Errorf("variable %s: query is neither a string nor an object with one: %w", v.Name, err)
	}
	return object.Query, nil
}

// grafanaRangeVariables are the variables Grafana sets itself that stand
// where PromQL wants a duration; the test puts a duration there.
var grafanaRangeVariables = []string{"$__rate_interval", "$__interval", "$__range"}

// labelValuesQuery is a query variable of Grafana's Prometheus data source
// that reads label values of a series selector.
var labelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// TestDashboardParsesAndShowsEveryMetricTheOperatorExports: every query of
// the shipped Grafana dashboard is PromQL that Prometheus parses once
// Grafana has put in its variables, reads only metrics the operator
// exports, and together they show every one of them.
func TestDashboardParsesAndShowsEveryMetricTheOperatorExports(t *testing.T) {
	g := NewWithT(t)
	exported := exportedMetrics(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "prometheus", "grafana-dashboard.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var dashboard grafanaDashboard
	g.Expect(json.Unmarshal(data, &dashboard)).To(Succeed())
	g.Expect(dashboard.UID).NotTo(BeEmpty(), "a fixed uid keeps links to the dashboard across imports")

	// Grafana replaces each variable by the values chosen, at most "All":
	// the variable's allValue. Longer names first, so $namespace is not
	// read as $name.
	var substitutions []string
	for _, v := range dashboard.Templating.List {
		if v.Type == "query" {
			g.Expect(v.AllValue).To(Equal(".*"), "variable %s", v.Name)
			substitutions = append(substitutions, "${"+v.Name+"}", v.AllValue, "$"+v.Name, v.AllValue)
		}
	}
	for _, name := range grafanaRangeVariables {
		substitutions = append(substitutions, name, "5m")
	}
	pairs := make([][2]string, 0, len(substitutions)/2)
	for i := 0; i < len(substitutions); i += 2 {
		pairs = append(pairs, [2]string{substitutions[i], substitutions[i+1]})
	}
	sort.SliceStable(pairs, func(a, b int) bool { return len(pairs[a][0]) > len(pairs[b][0]) })
	var ordered []string
	for _, p := range pairs {
		ordered = append(ordered, p[0], p[1])
	}
	asGrafanaSends := strings.NewReplacer(ordered...)

	shown := map[string]bool{}
	check := func(where, expr string) {
		sent := asGrafanaSends.Replace(expr)
		g.Expect(sent).NotTo(ContainSubstring("$"), "%s uses a variable the dashboard does not define: %s", where, expr)
		names, err := metricNames(sent)
		g.Expect(err).NotTo(HaveOccurred(), "%s: %s", where, expr)
		g.Expect(names).NotTo(BeEmpty(), "%s reads a metric", where)
		for _, name := range names {
			g.Expect(exported).To(HaveKey(name), "%s reads %s, which the operator does not export", where, name)
			shown[exported[name]] = true
		}
	}

	for _, v := range dashboard.Templating.List {
		if v.Type != "query" {
			continue
		}
		query, err := v.query()
		g.Expect(err).NotTo(HaveOccurred())
		m := labelValuesQuery.FindStringSubmatch(query)
		g.Expect(m).NotTo(BeNil(), "variable %s reads label_values(selector, label): %s", v.Name, query)
		check("variable "+v.Name, m[1])
	}

	var panels []grafanaPanel
	var walk func([]grafanaPanel)
	walk = func(list []grafanaPanel) {
		for _, p := range list {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			panels = append(panels, p)
		}
	}
	walk(dashboard.Panels)
	g.Expect(panels).NotTo(BeEmpty())
	for _, p := range panels {
		g.Expect(p.Datasource).To(Equal(&grafanaDatasource{Type: "prometheus", UID: "${datasource}"}), "panel %q reads the data source chosen", p.Title)
		g.Expect(p.Targets).NotTo(BeEmpty(), "panel %q queries something", p.Title)
		for _, target := range p.Targets {
			check(fmt.Sprintf("panel %q, query %s", p.Title, target.RefID), target.Expr)
		}
	}

	var families []string
	for _, family := range exported {
		if !slices.Contains(families, family) {
			families = append(families, family)
		}
	}
	for _, family := range families {
		g.Expect(shown).To(HaveKey(family), "the dashboard shows %s", family)
	}
}

// promqlBlock is a fenced PromQL example of a page.
var promqlBlock = regexp.MustCompile("(?s)```promql\n(.*?)```")

// TestTheDocsPromQLExamplesParseAndReadExportedMetrics: a query a reader
// copies from the docs runs as written.
func TestTheDocsPromQLExamplesParseAndReadExportedMetrics(t *testing.T) {
	g := NewWithT(t)
	exported := exportedMetrics(t)
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	g.Expect(err).NotTo(HaveOccurred())
	examples := 0
	for _, page := range pages {
		content, err := os.ReadFile(page)
		g.Expect(err).NotTo(HaveOccurred())
		for _, m := range promqlBlock.FindAllStringSubmatch(string(content), -1) {
			examples++
			names, err := metricNames(m[1])
			g.Expect(err).NotTo(HaveOccurred(), "%s: %s", page, m[1])
			for _, name := range names {
				g.Expect(exported).To(HaveKey(name), "%s reads %s, which the operator does not export", page, name)
			}
		}
	}
	g.Expect(examples).To(BeNumerically(">=", 3), "the walk found the examples of docs/metrics.md and docs/rollout.md")
}
