package metrics_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/yaml"

	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/controllers/profilesync"
)

// promqlNames are the metric names an expression reads. It is enough for
// our rules, not a PromQL parser: it drops strings, label matchers, ranges
// and grouping clauses, then takes every identifier that is neither a
// function or aggregation (followed by a parenthesis), nor a keyword, nor
// part of a number or duration.
func promqlNames(expr string) []string {
	for _, drop := range []*regexp.Regexp{promqlString, promqlMatchers, promqlRange, promqlGrouping} {
		expr = drop.ReplaceAllString(expr, " ")
	}
	var names []string
	for _, loc := range promqlIdentifier.FindAllStringIndex(expr, -1) {
		start, end := loc[0], loc[1]
		if start > 0 && strings.ContainsAny(expr[start-1:start], "0123456789.") {
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(expr[end:], " \t\n"), "(") {
			continue
		}
		if name := expr[start:end]; !promqlKeywords[strings.ToLower(name)] && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

var (
	promqlString     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlMatchers   = regexp.MustCompile(`\{[^}]*\}`)
	promqlRange      = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlIdentifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promqlKeywords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"group_left": true, "group_right": true, "inf": true, "nan": true}
)

func TestPromQLNames(t *testing.T) {
	for _, row := range []struct {
		expr string
		want []string
	}{
		{`profilesync_sync_ready == 0`, []string{"profilesync_sync_ready"}},
		{`max by (namespace, name) (profilesync_sync_ready{name!="x"}) == 0 unless on (namespace, name) profilesync_sync_suspended == 1`,
			[]string{"profilesync_sync_ready", "profilesync_sync_suspended"}},
		{`increase(profilesync_sync_revisions_refused_total[10m]) > 0`, []string{"profilesync_sync_revisions_refused_total"}},
		{`time() - profilesync_profile_next_transition_timestamp_seconds offset 5m > 1e3`, []string{"profilesync_profile_next_transition_timestamp_seconds"}},
		{`histogram_quantile(0.9, sum by (le) (rate(x_bucket{a="b c"}[5m])))`, []string{"x_bucket"}},
	} {
		if got := promqlNames(row.expr); !slices.Equal(got, row.want) {
			t.Errorf("promqlNames(%q) = %q, want %q", row.expr, got, row.want)
		}
	}
}

// prometheusRule is the part of config/prometheus/prometheusrule.yaml the
// tests read.
type prometheusRule struct {
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
				For   string `json:"for"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// TestAlertsAndDocsNameOnlyMetricsWeExport keeps the sample alerts and
// docs/metrics.md in step with the code: every metric an alert reads is one
// Metrics exports, and the document names every metric and every alert.
func TestAlertsAndDocsNameOnlyMetricsWeExport(t *testing.T) {
	g := NewWithT(t)
	registry, _ := metrics.EveryMetric(t)
	// SetupAll registers the decoded revisions' gauges beside Metrics.
	g.Expect(registry.Register((&profilesync.ProfileSyncReconciler{}).DecodedRevisionsCollector())).To(Succeed())
	problems, err := testutil.GatherAndLint(registry)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problems).To(BeEmpty())
	exported := metrics.FamilyNames(t, registry)

	data, err := os.ReadFile(filepath.Join("..", "..", "config", "prometheus", "prometheusrule.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var rule prometheusRule
	g.Expect(yaml.Unmarshal(data, &rule)).To(Succeed())
	var alerts []string
	for _, group := range rule.Spec.Groups {
		for _, r := range group.Rules {
			g.Expect(r.Alert).NotTo(BeEmpty(), "every rule of %s is an alert", group.Name)
			alerts = append(alerts, r.Alert)
			names := promqlNames(r.Expr)
			g.Expect(names).NotTo(BeEmpty(), "%s reads a metric", r.Alert)
			for _, name := range names {
				g.Expect(exported).To(ContainElement(name), "%s reads %s, which Metrics does not export", r.Alert, name)
			}
		}
	}
	g.Expect(alerts).To(ConsistOf("ProfileSyncNotReady", "ProfileSyncRevisionRefused", "ProfileTransitionOverdue", "ProfileHoldExpiresWhileGitDiffers"))

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	g.Expect(err).NotTo(HaveOccurred())
	families, err := registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		g.Expect(string(doc)).To(ContainSubstring("`"+f.GetName()+"`"), "docs/metrics.md describes %s", f.GetName())
	}
	for _, alert := range alerts {
		g.Expect(string(doc)).To(ContainSubstring("`"+alert+"`"), "docs/metrics.md describes the alert %s", alert)
	}
}
