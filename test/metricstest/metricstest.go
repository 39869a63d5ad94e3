// Package metricstest reads the series a Prometheus registry gathers, for
// the tests of the operator's metrics. Only tests import it.
package metricstest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Series are the series of the metric family name in registry whose labels
// include want (a label wanted with the value "" matches a series without
// it), with their value: a gauge's or counter's value, a histogram's count.
func Series(g gomega.Gomega, registry prometheus.Gatherer, name string, want map[string]string) map[string]float64 {
	families, err := registry.Gather()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	found := map[string]float64{}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			if !HasLabels(m, want) {
				continue
			}
			var value float64
			switch {
			case m.Gauge != nil:
				value = m.GetGauge().GetValue()
			case m.Counter != nil:
				value = m.GetCounter().GetValue()
			case m.Histogram != nil:
				value = float64(m.GetHistogram().GetSampleCount())
			}
			found[labelString(m)] = value
		}
	}
	return found
}

// HasLabels tells whether m has every label of want, with its value.
func HasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func labelString(m *dto.Metric) string {
	parts := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Value is the value of the one series of name with the labels want in
// registry.
func Value(g gomega.Gomega, registry prometheus.Gatherer, name string, want map[string]string) float64 {
	found := Series(g, registry, name, want)
	g.Expect(found).To(gomega.HaveLen(1), "one series %s%v", name, want)
	for _, v := range found {
		return v
	}
	return 0
}

// FamiliesWith are the families of registry whose name has prefix and that
// have a series with the labels want.
func FamiliesWith(g gomega.Gomega, registry prometheus.Gatherer, prefix string, want map[string]string) []string {
	families, err := registry.Gather()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var names []string
	for _, family := range families {
		if !strings.HasPrefix(family.GetName(), prefix) {
			continue
		}
		if slices.ContainsFunc(family.GetMetric(), func(m *dto.Metric) bool { return HasLabels(m, want) }) {
			names = append(names, family.GetName())
		}
	}
	return names
}

// WithLabels is base with the label pairs of extra (name, value, ...) added.
func WithLabels(base map[string]string, extra ...string) map[string]string {
	out := make(map[string]string, len(base)+len(extra)/2)
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		out[extra[i]] = extra[i+1]
	}
	return out
}
