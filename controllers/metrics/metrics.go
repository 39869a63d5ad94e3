// Package metrics holds the operator's own Prometheus metrics (docs/metrics.md):
// the ProfileSync reconciler reports its syncs to them, the status
// reconcilers the status they write.
package metrics

import (
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// The phases of a sync, the values of profilesync_sync_duration_seconds's
// phase label.
const (
	PhaseFetch    = "fetch"    // resolve the ref and check the revision out
	PhaseRollout  = "rollout"  // the rollout gate: read the landscapes' records and decide which commit to take
	PhaseBuild    = "build"    // kustomize build and decode; skipped when the revision was built before
	PhaseValidate = "validate" // read the live profiles, check the set, tenancy and the update rules
	PhaseHold     = "hold"     // judge the holds of break glass, and remove the annotations of those that end
	PhaseApply    = "apply"    // server-side apply of every profile
	PhasePrune    = "prune"    // delete what left Git
	PhaseRecord   = "record"   // push the landscape's record to Git; only when one is pushed
	PhaseStatus   = "status"   // the ProfileSync's status patch
)

// The labels that name an object.
const (
	labelKind      = "kind"
	labelNamespace = "namespace"
	labelName      = "name"
)

// The values of profilesync_profile_versions's versions label.
const (
	versionsKubernetes   = "kubernetes"
	versionsMachineImage = "machineImage"
)

// Classifications are the classifications profilesync_profile_versions
// always reports, zero included, so a query for a class that has no versions
// finds a 0 rather than nothing.
var Classifications = []v1alpha1.VersionClassification{
	v1alpha1.ClassificationUnavailable,
	v1alpha1.ClassificationPreview,
	v1alpha1.ClassificationSupported,
	v1alpha1.ClassificationDeprecated,
	v1alpha1.ClassificationExpired,
}

// Metrics are the operator's own Prometheus metrics, beyond
// controller-runtime's: how long each phase of a sync takes, what each
// ProfileSync last applied and whether it is Ready, which revisions were
// refused and why, and per profile the versions in each classification and
// the time to the next transition. docs/metrics.md describes every one.
//
// The reconcilers report to it; a nil *Metrics takes every report and
// records nothing. Gauges of state are kept per object here and turned into
// samples at scrape time, so a deleted object's series end with its entry,
// and the seconds to a transition are computed from the clock of that
// scrape.
type Metrics struct {
	// clock is the controllers' clock: the time of an applied revision and
	// the "now" of the seconds to the next transition.
	clock clock.PassiveClock
	// stopwatch measures the phases. It is the real clock even when the
	// controllers run on a fixed one (tests), where every phase would
	// otherwise take no time.
	stopwatch clock.PassiveClock
	// refusalReasons are the refused counter's reasons, each reported from
	// a ProfileSync's first sync on.
	refusalReasons []string

	syncDuration *prometheus.HistogramVec
	refused      *prometheus.CounterVec
	promotions   *prometheus.CounterVec

	syncReady          *prometheus.Desc
	syncSuspended      *prometheus.Desc
	syncRevision       *prometheus.Desc
	syncAppliedAt      *prometheus.Desc
	syncHeld           *prometheus.Desc
	holdExpiry         *prometheus.Desc
	syncDrifted        *prometheus.Desc
	rolloutWaiting     *prometheus.Desc
	rolloutSoak        *prometheus.Desc
	rolloutHeld        *prometheus.Desc
	recordFailures     *prometheus.Desc
	refusedHolds       *prometheus.Desc
	profileVersions    *prometheus.Desc
	profileNext        *prometheus.Desc
	profileSecondsNext *prometheus.Desc

	mu       sync.Mutex
	syncs    map[types.NamespacedName]*syncState
	profiles map[profileKey]profileState
}

// syncState is what the gauges of one ProfileSync report.
type syncState struct {
	ready, suspended bool
	// revision is status.lastAppliedRevision.
	revision string
	// appliedAt is when this process last applied a revision; zero before.
	appliedAt time.Time
	// holds is status.holds.
	holds []v1alpha1.ObjectHold
	// drifted counts the objects left drifted under driftDetection mode
	// warn at the last sync that compared them.
	drifted int
	// waiting is the rollout candidate the landscape waits for, and
	// waitingSince when this process first saw it wait; empty and zero
	// when none waits.
	waiting      string
	waitingSince time.Time
	// soak is the soak of the landscape when it has upstream landscapes
	// (and the ProfileSync follows a branch): how long a candidate waits
	// at the least; nil when nothing gates the ProfileSync.
	soak *time.Duration
	// rolloutHeld is spec.rollout.hold: a candidate waits on purpose.
	rolloutHeld bool
	// recordFailures counts the pushes of the landscape's record that
	// failed in a row; 0 once one succeeds.
	recordFailures int
	// refusedHolds counts the hold annotations the last sync could not
	// honour (their objects were synced as if not held).
	refusedHolds int
}

type profileKey struct {
	kind string
	types.NamespacedName
}

// profileState is what the gauges of one profile report, taken from the
// status its controller wrote.
type profileState struct {
	// versions counts versions per versions label and classification.
	versions map[[2]string]int
	// next is status.nextTransitionTime; nil when none is scheduled.
	next *time.Time
}

// New returns the metrics of the controllers running on clk. Register
// it (it is a prometheus.Collector) where it is scraped:
// controller-runtime's metrics.Registry in the operator. refusalReasons are
// the reasons a sync refuses a revision for (profilesync.RefusalReasons):
// each ProfileSync reports a count for every one, zero included.
func New(clk clock.PassiveClock, refusalReasons []string) *Metrics {
	syncLabels := []string{labelNamespace, labelName}
	profileLabels := []string{labelKind, labelNamespace, labelName}
	return &Metrics{
		clock:          clk,
		stopwatch:      clock.RealClock{},
		refusalReasons: refusalReasons,
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "profilesync_sync_duration_seconds",
			Help: "Duration of the phases of a ProfileSync's sync (fetch, rollout, build, validate, hold, apply, prune, record, status), one observation per phase run in a sync.",
			// From a cached build to a fetch that runs into spec.timeout.
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{labelNamespace, labelName, "phase"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "profilesync_sync_revisions_refused_total",
			Help: "Distinct failures of a ProfileSync's syncs (reason, revision and cause; retries of the same failure count once), " +
				"by the reason of its Ready condition (FetchFailed, BuildFailed, ValidationFailed, AccessDenied, ApplyFailed).",
		}, []string{labelNamespace, labelName, "reason"}),
		promotions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "profilesync_rollout_promotions_total",
			Help: "Commits a ProfileSync's landscape took ahead of its branch's tip through the rollout, by reason: Promoted (its upstream landscapes held it for the soak) or Hotfix (spec.rollout.hotfix).",
		}, []string{labelNamespace, labelName, "reason"}),
		syncReady: prometheus.NewDesc("profilesync_sync_ready",
			"1 when the ProfileSync's Ready condition is True, else 0.", syncLabels, nil),
		syncSuspended: prometheus.NewDesc("profilesync_sync_suspended",
			"1 when the ProfileSync is suspended (spec.suspend), else 0.", syncLabels, nil),
		syncRevision: prometheus.NewDesc("profilesync_sync_applied_revision_info",
			"Always 1; the revision label is the ProfileSync's status.lastAppliedRevision.", []string{labelNamespace, labelName, "revision"}, nil),
		syncAppliedAt: prometheus.NewDesc("profilesync_sync_last_applied_timestamp_seconds",
			"When the ProfileSync last applied its revision in full (a successful sync), in Unix seconds; absent until the first one since the operator started.",
			syncLabels, nil),
		syncHeld: prometheus.NewDesc("profilesync_held_objects",
			"Objects of the ProfileSync held by break glass (status.holds): the sync writes nothing to them until Git catches up or the hold expires.",
			syncLabels, nil),
		holdExpiry: prometheus.NewDesc("profilesync_hold_expiry_timestamp_seconds",
			"When the hold of a held object expires, in Unix seconds; present only while the object is held, that is while it still differs from Git.",
			[]string{labelNamespace, labelName, "object_kind", "object_namespace", "object_name"}, nil),
		syncDrifted: prometheus.NewDesc("profilesync_drifted_objects",
			"Objects that differ from Git on fields Git sets and were left as they are (driftDetection mode warn), at the ProfileSync's last sync; 0 in mode correct.",
			syncLabels, nil),
		rolloutWaiting: prometheus.NewDesc("profilesync_rollout_candidate_waiting_seconds",
			"Seconds from when the operator first saw the landscape's rollout candidate (status.rollout.waiting) wait to the scrape, by the operator's clock; absent while none waits.",
			[]string{labelNamespace, labelName, "candidate"}, nil),
		rolloutSoak: prometheus.NewDesc("profilesync_rollout_soak_seconds",
			"The soak of the ProfileSync's landscape (profilesync-rollout.yaml): how long its upstream landscapes must hold a commit before it takes it; "+
				"present while the landscape has upstream landscapes and the ProfileSync follows a branch.",
			syncLabels, nil),
		rolloutHeld: prometheus.NewDesc("profilesync_rollout_held",
			"1 while spec.rollout.hold keeps the ProfileSync's landscape at the revision it runs, else 0.", syncLabels, nil),
		recordFailures: prometheus.NewDesc("profilesync_rollout_record_failed_pushes",
			"Pushes of the landscape's record (spec.rollout.record) that failed in a row; 0 once one succeeds. Landscapes downstream wait while it is not pushed.",
			syncLabels, nil),
		refusedHolds: prometheus.NewDesc("profilesync_refused_holds",
			"Break-glass holds on objects of the ProfileSync that its last sync could not honour (hold-until not RFC 3339, past, beyond --max-hold, "+
				"or a hold-reason without hold-until): those objects were synced as if not held.",
			syncLabels, nil),
		profileVersions: prometheus.NewDesc("profilesync_profile_versions",
			"Versions of a profile's status per classification; versions is kubernetes or machineImage (all images together).",
			[]string{labelKind, labelNamespace, labelName, "versions", "classification"}, nil),
		profileNext: prometheus.NewDesc("profilesync_profile_next_transition_timestamp_seconds",
			"The profile's status.nextTransitionTime in Unix seconds; absent when no transition is scheduled.", profileLabels, nil),
		profileSecondsNext: prometheus.NewDesc("profilesync_profile_seconds_until_next_transition",
			"Seconds from the operator's clock at the scrape to the profile's status.nextTransitionTime; negative once it has passed; "+
				"absent when no transition is scheduled.", profileLabels, nil),
		syncs:    map[types.NamespacedName]*syncState{},
		profiles: map[profileKey]profileState{},
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.syncDuration.Describe(ch)
	m.refused.Describe(ch)
	m.promotions.Describe(ch)
	for _, d := range []*prometheus.Desc{m.syncReady, m.syncSuspended, m.syncRevision, m.syncAppliedAt,
		m.syncHeld, m.holdExpiry, m.syncDrifted, m.rolloutWaiting, m.rolloutSoak, m.rolloutHeld, m.recordFailures, m.refusedHolds,
		m.profileVersions, m.profileNext, m.profileSecondsNext} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.syncDuration.Collect(ch)
	m.refused.Collect(ch)
	m.promotions.Collect(ch)
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, s := range m.syncs {
		ch <- prometheus.MustNewConstMetric(m.syncReady, prometheus.GaugeValue, boolValue(s.ready), key.Namespace, key.Name)
		ch <- prometheus.MustNewConstMetric(m.syncSuspended, prometheus.GaugeValue, boolValue(s.suspended), key.Namespace, key.Name)
		if s.revision != "" {
			ch <- prometheus.MustNewConstMetric(m.syncRevision, prometheus.GaugeValue, 1, key.Namespace, key.Name, s.revision)
		}
		if !s.appliedAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(m.syncAppliedAt, prometheus.GaugeValue, unixSeconds(s.appliedAt), key.Namespace, key.Name)
		}
		ch <- prometheus.MustNewConstMetric(m.syncHeld, prometheus.GaugeValue, float64(len(s.holds)), key.Namespace, key.Name)
		for _, h := range s.holds {
			ch <- prometheus.MustNewConstMetric(m.holdExpiry, prometheus.GaugeValue, unixSeconds(h.Until.Time),
				key.Namespace, key.Name, h.Kind, h.Namespace, h.Name)
		}
		ch <- prometheus.MustNewConstMetric(m.syncDrifted, prometheus.GaugeValue, float64(s.drifted), key.Namespace, key.Name)
		if s.waiting != "" {
			ch <- prometheus.MustNewConstMetric(m.rolloutWaiting, prometheus.GaugeValue, now.Sub(s.waitingSince).Seconds(), key.Namespace, key.Name, s.waiting)
		}
		if s.soak != nil {
			ch <- prometheus.MustNewConstMetric(m.rolloutSoak, prometheus.GaugeValue, s.soak.Seconds(), key.Namespace, key.Name)
		}
		ch <- prometheus.MustNewConstMetric(m.rolloutHeld, prometheus.GaugeValue, boolValue(s.rolloutHeld), key.Namespace, key.Name)
		ch <- prometheus.MustNewConstMetric(m.recordFailures, prometheus.GaugeValue, float64(s.recordFailures), key.Namespace, key.Name)
		ch <- prometheus.MustNewConstMetric(m.refusedHolds, prometheus.GaugeValue, float64(s.refusedHolds), key.Namespace, key.Name)
	}
	for key, p := range m.profiles {
		for _, versions := range []string{versionsKubernetes, versionsMachineImage} {
			for _, c := range Classifications {
				ch <- prometheus.MustNewConstMetric(m.profileVersions, prometheus.GaugeValue, float64(p.versions[[2]string{versions, string(c)}]),
					key.kind, key.Namespace, key.Name, versions, string(c))
			}
		}
		if p.next != nil {
			ch <- prometheus.MustNewConstMetric(m.profileNext, prometheus.GaugeValue, unixSeconds(*p.next), key.kind, key.Namespace, key.Name)
			ch <- prometheus.MustNewConstMetric(m.profileSecondsNext, prometheus.GaugeValue, p.next.Sub(now).Seconds(), key.kind, key.Namespace, key.Name)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / float64(time.Second)
}

// ObserveProfile records the status a profile's controller wrote.
func (m *Metrics) ObserveProfile(kind string, obj client.Object, status *v1alpha1.ProfileVersionsStatus) {
	if m == nil {
		return
	}
	p := profileState{versions: map[[2]string]int{}}
	if status.Kubernetes != nil {
		for _, v := range status.Kubernetes.Versions {
			p.versions[[2]string{versionsKubernetes, string(v.Classification)}]++
		}
	}
	for _, image := range status.MachineImages {
		for _, v := range image.Versions {
			p.versions[[2]string{versionsMachineImage, string(v.Classification)}]++
		}
	}
	if status.NextTransitionTime != nil {
		next := status.NextTransitionTime.Time
		p.next = &next
	}
	key := profileKey{kind: kind, NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.profiles[key] = p
}

// ForgetProfile ends the series of a deleted profile.
func (m *Metrics) ForgetProfile(kind string, key types.NamespacedName) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.profiles, profileKey{kind: kind, NamespacedName: key})
}

// ForgetSync ends the series of a deleted ProfileSync.
func (m *Metrics) ForgetSync(key types.NamespacedName) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.syncs, key)
	m.mu.Unlock()
	labels := prometheus.Labels{labelNamespace: key.Namespace, labelName: key.Name}
	m.syncDuration.DeletePartialMatch(labels)
	m.refused.DeletePartialMatch(labels)
	m.promotions.DeletePartialMatch(labels)
}

// Promoted counts a commit the rollout took, by reason.
func (m *Metrics) Promoted(obj *v1alpha1.ProfileSync, reason string) {
	if m == nil {
		return
	}
	m.promotions.WithLabelValues(obj.Namespace, obj.Name, reason).Inc()
}

// ObserveWaiting records the candidate the landscape waits for; empty when
// none waits. A candidate keeps the time it was first seen while it waits.
func (m *Metrics) ObserveWaiting(obj *v1alpha1.ProfileSync, candidate string) {
	if m == nil {
		return
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.syncState(obj)
	if s.waiting != candidate {
		s.waiting, s.waitingSince = candidate, now
	}
}

// ObserveSoak records the soak of the ProfileSync's landscape (profilesync's upstreamSoak);
// nil when nothing gates it.
func (m *Metrics) ObserveSoak(obj *v1alpha1.ProfileSync, soak *time.Duration) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncState(obj).soak = soak
}

// ObserveRecordPush records the outcome of a push of the landscape's
// record: failuresInARow is 0 after a push that succeeded.
func (m *Metrics) ObserveRecordPush(obj *v1alpha1.ProfileSync, failuresInARow int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncState(obj).recordFailures = failuresInARow
}

// ObserveRefusedHolds records how many holds a sync could not honour.
func (m *Metrics) ObserveRefusedHolds(obj *v1alpha1.ProfileSync, refused int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncState(obj).refusedHolds = refused
}

// RefusedRevision counts a failure of a sync, by its reason; the caller
// counts a failure retried with backoff once (the ProfileSync reconciler reports it once).
func (m *Metrics) RefusedRevision(obj *v1alpha1.ProfileSync, reason string) {
	if m == nil {
		return
	}
	m.refused.WithLabelValues(obj.Namespace, obj.Name, reason).Inc()
}

// AppliedRevision records a successful sync at the controllers' now.
func (m *Metrics) AppliedRevision(obj *v1alpha1.ProfileSync) {
	if m == nil {
		return
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncState(obj).appliedAt = now
}

// ObserveDrift records how many objects a sync left drifted.
func (m *Metrics) ObserveDrift(obj *v1alpha1.ProfileSync, drifted int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncState(obj).drifted = drifted
}

// syncState is the entry of obj, made when missing. m.mu is held.
func (m *Metrics) syncState(obj *v1alpha1.ProfileSync) *syncState {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	s, ok := m.syncs[key]
	if !ok {
		s = &syncState{}
		m.syncs[key] = s
		for _, reason := range m.refusalReasons {
			m.refused.WithLabelValues(obj.Namespace, obj.Name, reason)
		}
	}
	return s
}

// SyncTimer times the phases of one sync. The sync hands it from phase to
// phase (start) and the reconciler ends it after the status patch (finish);
// a nil SyncTimer (no Metrics) times nothing.
type SyncTimer struct {
	metrics *Metrics
	obj     *v1alpha1.ProfileSync
	// phase is the phase under way since mark; empty before the first.
	phase string
	mark  time.Time
	// spent is the time of each phase so far; a phase is observed once per
	// sync, with its total.
	spent map[string]time.Duration
}

// StartSync begins timing a sync of obj.
func (m *Metrics) StartSync(obj *v1alpha1.ProfileSync) *SyncTimer {
	if m == nil {
		return nil
	}
	return &SyncTimer{metrics: m, obj: obj, spent: map[string]time.Duration{}}
}

// Start ends the phase under way, if any, and starts phase.
func (t *SyncTimer) Start(phase string) {
	if t == nil {
		return
	}
	now := t.metrics.stopwatch.Now()
	t.endPhase(now)
	t.phase, t.mark = phase, now
}

func (t *SyncTimer) endPhase(now time.Time) {
	if t.phase == "" {
		return
	}
	t.spent[t.phase] += now.Sub(t.mark)
	t.phase = ""
}

// Finish ends the sync: it observes each phase's duration and records the
// ProfileSync's state as its status now says.
func (t *SyncTimer) Finish() {
	if t == nil {
		return
	}
	m := t.metrics
	t.endPhase(m.stopwatch.Now())
	for phase, spent := range t.spent {
		m.syncDuration.WithLabelValues(t.obj.Namespace, t.obj.Name, phase).Observe(spent.Seconds())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.syncState(t.obj)
	s.ready = conditions.IsReady(t.obj)
	s.suspended = t.obj.Spec.Suspend
	s.rolloutHeld = t.obj.Spec.Rollout != nil && t.obj.Spec.Rollout.Hold
	s.revision = t.obj.Status.LastAppliedRevision
	s.holds = append([]v1alpha1.ObjectHold(nil), t.obj.Status.Holds...)
}
