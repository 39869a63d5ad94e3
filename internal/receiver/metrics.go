package receiver

import "github.com/prometheus/client_golang/prometheus"

// The values of profilesync_receiver_requests_total's result label.
const (
	// resultTriggered: the token was proved and a sync started at once.
	resultTriggered = "triggered"
	// resultDeferred: the token was proved; the sync starts at the end of
	// the trigger spacing.
	resultDeferred = "deferred"
	// resultCoalesced: the token was proved, but a deferred sync was pending
	// already; the request was dropped.
	resultCoalesced = "coalesced"
	// resultRefused: the request did not prove the token of a ProfileSync
	// (404).
	resultRefused = "refused"
	// resultRejected: a method other than POST, a body too large or cut off.
	resultRejected = "rejected"
	// resultFailed: the receiver could not read what it needed or could not
	// trigger the sync (503).
	resultFailed = "failed"
)

// Metrics count what the receiver did with its requests and how often it
// read a Secret. docs/metrics.md describes them. A nil *Metrics counts
// nothing.
type Metrics struct {
	requests    *prometheus.CounterVec
	secretReads prometheus.Counter
}

// NewMetrics returns the receiver's metrics, every result at zero; register
// them where they are scraped (they are a prometheus.Collector).
func NewMetrics() *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "profilesync_receiver_requests_total",
			Help: "Requests to the push receiver, by what became of them: triggered, deferred, coalesced, refused, rejected, failed.",
		}, []string{"result"}),
		secretReads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "profilesync_receiver_secret_reads_total",
			Help: "Reads of webhook Secrets from the API server by the push receiver; at most one per Secret and token TTL.",
		}),
	}
	for _, result := range []string{resultTriggered, resultDeferred, resultCoalesced, resultRefused, resultRejected, resultFailed} {
		m.requests.WithLabelValues(result)
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.secretReads.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.secretReads.Collect(ch)
}

func (m *Metrics) request(result string) {
	if m != nil {
		m.requests.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) secretRead() {
	if m != nil {
		m.secretReads.Inc()
	}
}
