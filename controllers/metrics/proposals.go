package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// labelSource names a source of profilesync-versions.yaml.
const labelSource = "source"

// Proposals are the VersionUpdate controller's metrics (docs/metrics.md):
// the proposals it pushed and the checks of a source that failed, per
// VersionUpdate. A nil *Proposals takes every report and records nothing.
type Proposals struct {
	proposals      *prometheus.CounterVec
	sourceFailures *prometheus.CounterVec
}

// NewProposals makes the VersionUpdate controller's metrics; register them
// with a Prometheus registry.
func NewProposals() *Proposals {
	return &Proposals{
		proposals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "profilesync_version_proposals_total",
			Help: "Proposals of new versions a VersionUpdate pushed to its branch (a branch already carrying the proposal is not counted again).",
		}, []string{labelNamespace, labelName}),
		sourceFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "profilesync_version_source_failures_total",
			Help: "Checks of a source of profilesync-versions.yaml that failed (unreachable, bad credentials, bad tags, over its limits), by VersionUpdate and source.",
		}, []string{labelNamespace, labelName, labelSource}),
	}
}

// Describe implements prometheus.Collector.
func (p *Proposals) Describe(ch chan<- *prometheus.Desc) {
	p.proposals.Describe(ch)
	p.sourceFailures.Describe(ch)
}

// Collect implements prometheus.Collector.
func (p *Proposals) Collect(ch chan<- prometheus.Metric) {
	p.proposals.Collect(ch)
	p.sourceFailures.Collect(ch)
}

// Proposed counts a proposal the VersionUpdate pushed.
func (p *Proposals) Proposed(update types.NamespacedName) {
	if p == nil {
		return
	}
	p.proposals.WithLabelValues(update.Namespace, update.Name).Inc()
}

// SourceFailed counts a failed check of source.
func (p *Proposals) SourceFailed(update types.NamespacedName, source string) {
	if p == nil {
		return
	}
	p.sourceFailures.WithLabelValues(update.Namespace, update.Name, source).Inc()
}

// Forget drops the series of a deleted VersionUpdate.
func (p *Proposals) Forget(update types.NamespacedName) {
	if p == nil {
		return
	}
	labels := prometheus.Labels{labelNamespace: update.Namespace, labelName: update.Name}
	p.proposals.DeletePartialMatch(labels)
	p.sourceFailures.DeletePartialMatch(labels)
}
