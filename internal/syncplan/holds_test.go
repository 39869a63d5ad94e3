package syncplan_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/syncplan"
)

const memoryField = "spec.machineTypes[0] (m5.large).memory"

// shrink is the emergency edit of the tests: the first machine type's
// memory, a field Git sets, to 1Gi.
func shrink(s *v1alpha1.CloudProfileSpec) { s.MachineTypes[0].Memory = resource.MustParse("1Gi") }

func addVersion(s *v1alpha1.CloudProfileSpec) {
	s.Kubernetes.Versions = append(s.Kubernetes.Versions, v1alpha1.ExpirableVersion{Version: "1.32.0"})
}

func retype(s *v1alpha1.CloudProfileSpec) { s.Type = "aws" }

// liveEdit is an edit of the live CloudProfile's spec.
func liveEdit(edit func(*v1alpha1.CloudProfileSpec)) func(metav1.Object) {
	return func(o metav1.Object) { edit(&o.(*v1alpha1.CloudProfile).Spec) }
}

func heldEntries(p *syncplan.Plan) []string {
	var held []string
	for _, h := range p.Holds {
		held = append(held, syncplan.ObjectRef(h.InventoryEntry)+" until "+h.Until.UTC().Format(time.RFC3339))
	}
	return held
}

// TestHoldsAndThePlanThatFollows: which holds a plan honours, ends, refuses
// and ignores, and what it then writes, prunes and keeps.
func TestHoldsAndThePlanThatFollows(t *testing.T) {
	g := NewWithT(t)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	names := []string{"edited", "caught-up", "expired", "past", "unowned"}
	var objects []profile.Object
	for _, name := range names {
		objects = append(objects, cloudProfile(name))
	}
	ncp := namespaced("team-a", "ncp", "edited")
	objects = append(objects, ncp)
	dropped := cloudProfile("dropped")
	in := input(t, landscape, objects,
		applied(t, objects[0], landscape, 2, hold(at(time.Hour)), memory("1Gi")),
		applied(t, objects[1], landscape, 2, hold(at(time.Hour))),
		applied(t, objects[2], landscape, 2, hold(at(0)), memory("1Gi")),
		applied(t, objects[3], landscape, 2, hold(at(-time.Hour)), memory("1Gi")),
		applied(t, objects[4], landscape, 2, hold(at(time.Hour)), memory("1Gi")),
		applied(t, ncp, landscape, 2, hold(at(time.Hour)), func(o metav1.Object) {
			o.(*v1alpha1.NamespacedCloudProfile).Spec.Kubernetes = &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{{Version: "1.30.0"}}}
		}),
		applied(t, dropped, landscape, 1, hold(at(time.Hour))),
	)
	for _, name := range []string{"edited", "caught-up", "expired", "past", "dropped"} {
		owns(&in, landscape, v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: name})
	}
	owns(&in, landscape, entry(ncp))
	in.PreviousHolds = []v1alpha1.ObjectHold{
		{InventoryEntry: v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: "expired"}, Until: metav1.NewTime(now)},
		// Git has since caught up with the edit this hold recorded.
		{InventoryEntry: v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: "caught-up"}, Until: metav1.NewTime(at(time.Hour)),
			ObservedGeneration: 2, DriftedFields: []string{memoryField}},
	}

	p, err := syncplan.Decide(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Refusal).NotTo(HaveOccurred())
	until := at(time.Hour).UTC().Format(time.RFC3339)
	g.Expect(heldEntries(p)).To(Equal([]string{
		"CloudProfile/dropped until " + until,
		"CloudProfile/edited until " + until,
		"NamespacedCloudProfile/team-a/ncp until " + until,
	}))
	var ended []string
	for _, r := range p.Releases {
		ended = append(ended, syncplan.ObjectRef(r.Entry)+" "+r.Reason)
	}
	g.Expect(ended).To(ConsistOf("CloudProfile/caught-up "+v1alpha1.HoldReleasedReason, "CloudProfile/expired "+v1alpha1.HoldExpiredReason))
	g.Expect(p.RefusedHolds).To(ConsistOf(And(HavePrefix("CloudProfile/past: annotation "+v1alpha1.HoldUntilAnnotation), ContainSubstring("is not in the future"))))
	g.Expect(p.IgnoredHolds).To(ConsistOf("CloudProfile/unowned"))
	g.Expect(written(p)).To(ConsistOf("CloudProfile/expired", "CloudProfile/past", "CloudProfile/unowned"), "every object but the held ones")
	g.Expect(p.Prunes).To(BeEmpty(), "a held object Git dropped is not pruned")
	g.Expect(p.Inventory).To(ContainElement(entry(dropped)), "and stays the ProfileSync's")
	g.Expect(p.HeldCondition().Message).To(ContainSubstring("CloudProfile/edited held until " + until + " (differs from Git on " + memoryField + ")"))
}

// TestHoldWaitsOnTheFieldsThatDrifted: a hold records the fields the held
// object differed from Git on when it was first judged, and the fields of
// later edits; what Git changes meanwhile is not waited on, so Git having
// the edit releases the hold whatever else Git changed.
func TestHoldWaitsOnTheFieldsThatDrifted(t *testing.T) {
	until := now.Add(time.Hour)
	base := cloudProfile("aws")
	var previous []v1alpha1.ObjectHold
	judge := func(t *testing.T, git profile.Object, generation int64, edits ...func(*v1alpha1.CloudProfileSpec)) *syncplan.Plan {
		t.Helper()
		liveEdits := []func(metav1.Object){hold(until)}
		for _, e := range edits {
			liveEdits = append(liveEdits, liveEdit(e))
		}
		in := input(t, landscape, []profile.Object{git}, applied(t, base, landscape, generation, liveEdits...))
		owns(&in, landscape, entry(base))
		in.PreviousHolds = previous
		p, err := syncplan.Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	recorded := func(g Gomega, p *syncplan.Plan) []string {
		g.Expect(p.Holds).To(HaveLen(1), "held")
		return p.Holds[0].DriftedFields
	}
	judged := func(p *syncplan.Plan) { previous = p.Holds }

	t.Run("the first judgement records the drift", func(t *testing.T) {
		g := NewWithT(t)
		p := judge(t, base, 2, shrink)
		g.Expect(recorded(g, p)).To(Equal([]string{memoryField}))
		g.Expect(p.Holds[0].ObservedGeneration).To(Equal(int64(2)))
		judged(p)
	})
	t.Run("a field Git changes during the hold is not waited on", func(t *testing.T) {
		g := NewWithT(t)
		p := judge(t, cloudProfile("aws", addVersion), 2, shrink)
		g.Expect(recorded(g, p)).To(Equal([]string{memoryField}))
		g.Expect(p.HeldCondition().Message).To(HaveSuffix("(differs from Git on " + memoryField + ")"))
		judged(p)
	})
	t.Run("Git having the edit releases the hold, whatever else Git changed", func(t *testing.T) {
		g := NewWithT(t)
		p := judge(t, cloudProfile("aws", addVersion, shrink), 2, shrink)
		g.Expect(p.Holds).To(BeEmpty())
		g.Expect(p.Releases).To(HaveLen(1))
		g.Expect(p.Releases[0].Reason).To(Equal(v1alpha1.HoldReleasedReason))
	})
	t.Run("a later edit's drift is added, and Git's changes of the time with it", func(t *testing.T) {
		g := NewWithT(t)
		// The new generation says the object was edited; which of the
		// differences are the edit's the plan cannot tell while Git has
		// changes too, so it waits on all rather than overwrite the edit.
		p := judge(t, cloudProfile("aws", addVersion), 3, shrink, retype)
		g.Expect(recorded(g, p)).To(Equal([]string{memoryField, "spec.kubernetes.versions[2] (1.32.0)", "spec.type"}))
		g.Expect(p.Holds[0].ObservedGeneration).To(Equal(int64(3)))
		judged(p)

		p = judge(t, cloudProfile("aws", addVersion, shrink), 3, shrink, retype)
		g.Expect(p.HeldCondition().Message).To(HaveSuffix("(differs from Git on spec.kubernetes.versions[2] (1.32.0), spec.type)"), "Git has only the first edit")
		judged(p)

		p = judge(t, cloudProfile("aws", addVersion, shrink, retype), 3, shrink, retype, addVersion)
		g.Expect(p.Holds).To(BeEmpty(), "Git has both edits, and the object Git's version")
	})
	t.Run("Git unchanged since the last apply: every difference is an edit", func(t *testing.T) {
		g := NewWithT(t)
		previous = []v1alpha1.ObjectHold{{InventoryEntry: entry(base), Until: metav1.NewTime(until), DriftedFields: []string{memoryField}, ObservedGeneration: 2}}
		p := judge(t, base, 2, shrink, retype)
		g.Expect(recorded(g, p)).To(Equal([]string{memoryField, "spec.type"}), "found without a new generation, as an edit of labels or annotations is")
	})
}

// TestGitCaughtUpIsJudgedAgainstTheDriftUnderTheHold: the release decision
// of a hold, judged on one held CloudProfile. Git has caught up only when
// something drifted under the hold and Git now has it; a hold under which
// nothing has drifted yet (set before the edit) stays.
func TestGitCaughtUpIsJudgedAgainstTheDriftUnderTheHold(t *testing.T) {
	tests := []struct {
		name string
		// previous is the hold status.holds lists, nil when the hold was
		// never judged.
		previous *v1alpha1.ObjectHold
		// editLive edits the live object; gitHasEdit gives Git the edit too.
		editLive, gitHasEdit bool
		generation           int64
		wantReleased         bool
		wantRecorded         []string
	}{
		{name: "a new hold on an object nobody edited yet stays, recording nothing",
			generation: 1, wantRecorded: nil},
		{name: "a hold judged with nothing drifted stays while nothing is edited",
			previous: &v1alpha1.ObjectHold{ObservedGeneration: 1}, generation: 1, wantRecorded: nil},
		{name: "an edit under a hold set before it is recorded, and held",
			previous: &v1alpha1.ObjectHold{ObservedGeneration: 1}, editLive: true, generation: 2, wantRecorded: []string{memoryField}},
		{name: "a new hold set with the edit in one write records the edit, and holds",
			editLive: true, generation: 2, wantRecorded: []string{memoryField}},
		{name: "Git having the recorded edit releases the hold",
			previous: &v1alpha1.ObjectHold{ObservedGeneration: 2, DriftedFields: []string{memoryField}}, editLive: true, gitHasEdit: true, generation: 2, wantReleased: true},
		{name: "Git still differing on the recorded edit keeps the hold",
			previous: &v1alpha1.ObjectHold{ObservedGeneration: 2, DriftedFields: []string{memoryField}}, editLive: true, generation: 2, wantRecorded: []string{memoryField}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			base := cloudProfile("aws")
			until := now.Add(time.Hour)
			edits := []func(metav1.Object){hold(until)}
			if tt.editLive {
				edits = append(edits, liveEdit(shrink))
			}
			git := base
			if tt.gitHasEdit {
				git = cloudProfile("aws", shrink)
			}
			in := input(t, landscape, []profile.Object{git}, applied(t, base, landscape, tt.generation, edits...))
			owns(&in, landscape, entry(base))
			if tt.previous != nil {
				previous := *tt.previous
				previous.InventoryEntry, previous.Until = entry(base), metav1.NewTime(until)
				in.PreviousHolds = []v1alpha1.ObjectHold{previous}
			}
			p, err := syncplan.Decide(in)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.wantReleased {
				g.Expect(p.Holds).To(BeEmpty())
				g.Expect(p.Releases).To(HaveLen(1))
				g.Expect(p.Releases[0].Reason).To(Equal(v1alpha1.HoldReleasedReason))
				return
			}
			g.Expect(p.Releases).To(BeEmpty(), "not released")
			g.Expect(p.Holds).To(HaveLen(1))
			g.Expect(p.Holds[0].DriftedFields).To(Equal(tt.wantRecorded))
			g.Expect(p.Holds[0].ObservedGeneration).To(Equal(tt.generation))
			if len(tt.wantRecorded) == 0 {
				g.Expect(p.HeldCondition().Message).To(HaveSuffix("(nothing drifted yet: any edit is held until the hold expires or is removed)"))
			}
		})
	}
}

// TestCatchUpNeedsDriftUnderTheHold: the release decision alone, as diff
// --cluster asks it too.
func TestCatchUpNeedsDriftUnderTheHold(t *testing.T) {
	git := cloudProfile("aws", retype)
	tests := []struct {
		name      string
		recorded  []string
		liveSpec  func(*v1alpha1.CloudProfileSpec)
		want      bool
		wantWaits []string
	}{
		{name: "nothing drifted under the hold: not caught up", liveSpec: retype, want: false},
		{name: "a recorded field Git still differs on: not caught up", recorded: []string{"spec.type"}, liveSpec: func(s *v1alpha1.CloudProfileSpec) { s.Type = "gcp" },
			wantWaits: []string{"spec.type"}},
		{name: "every recorded field as Git has it: caught up", recorded: []string{"spec.type"}, liveSpec: retype, want: true},
		{name: "a field recorded whole is caught up when the whole is", recorded: []string{"spec"}, liveSpec: retype, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			live := applied(t, git, landscape, 1, liveEdit(tt.liveSpec))
			waiting, caughtUp, err := syncplan.CatchUp(git, live, tt.recorded)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(caughtUp).To(Equal(tt.want))
			g.Expect(waiting).To(Equal(tt.wantWaits))
		})
	}
}

// TestChangesUnderWarnReportDriftAndApplyWhatGitChanged: mode warn writes
// no drift back and reports it with its fields; an object Git changed is
// still written whole.
func TestChangesUnderWarnReportDriftAndApplyWhatGitChanged(t *testing.T) {
	g := NewWithT(t)
	drifted, changed := cloudProfile("drifted"), cloudProfile("changed")
	in := input(t, landscape, []profile.Object{drifted, cloudProfile("changed", addVersion)},
		applied(t, drifted, landscape, 2, memory("1Gi")), applied(t, changed, landscape, 2, memory("1Gi")))
	owns(&in, landscape, entry(drifted), entry(changed))
	in.DriftMode = v1alpha1.DriftDetectionWarn

	p, err := syncplan.Decide(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Drifts).To(Equal([]syncplan.Drift{{Ref: "CloudProfile/drifted", Fields: []string{memoryField}}}))
	g.Expect(written(p)).To(Equal([]string{"CloudProfile/changed"}))
	g.Expect(p.Writes[0].Fields).To(ContainElement(memoryField), "the new revision puts the drift back too")

	in.DriftMode = v1alpha1.DriftDetectionCorrect
	p, err = syncplan.Decide(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Drifts).To(BeEmpty())
	g.Expect(p.DriftedCondition()).To(BeNil())
	g.Expect(written(p)).To(HaveLen(2), "mode correct writes both")
}

// TestAHoldSetIsReportedOnce: a hold listed in status.holds with its expiry
// is not set again; one listed with another expiry is.
func TestAHoldSetIsReportedOnce(t *testing.T) {
	g := NewWithT(t)
	aws := cloudProfile("aws")
	until := now.Add(time.Hour)
	in := input(t, landscape, []profile.Object{aws}, applied(t, aws, landscape, 2, hold(until), memory("1Gi")))
	owns(&in, landscape, entry(aws))
	p, err := syncplan.Decide(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reasons(p.Events)).To(Equal([]string{v1alpha1.HoldSetReason}))
	g.Expect(p.Events[0].Topic).To(Equal(syncplan.TopicHeld))
	g.Expect(p.Topics[syncplan.TopicHeld]).To(Equal([]string{p.Events[0].Line}))

	in.PreviousHolds = p.Holds
	p, err = syncplan.Decide(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Events).To(BeEmpty())
	g.Expect(p.Topics[syncplan.TopicHeld]).To(HaveLen(1), "still remembered as held")

	in.PreviousHolds[0].Until = metav1.NewTime(until.Add(-time.Minute))
	p, err = syncplan.Decide(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reasons(p.Events)).To(Equal([]string{v1alpha1.HoldSetReason}), "a new expiry is a new hold")
}

// TestARefusedHoldIsReportedOnceForItsAnnotations: the message of a refused
// hold may name the time (an example expiry a day ahead), so it is
// remembered by its object and annotations: a plan a second later reports
// the same line, and a changed annotation a new one.
func TestARefusedHoldIsReportedOnceForItsAnnotations(t *testing.T) {
	g := NewWithT(t)
	aws := cloudProfile("aws")
	in := input(t, landscape, []profile.Object{aws}, applied(t, aws, landscape, 1, annotate(v1alpha1.HoldReasonAnnotation, "INC-1")))
	owns(&in, landscape, entry(aws))
	first, err := syncplan.Decide(in)
	g.Expect(err).NotTo(HaveOccurred())
	in.Now = in.Now.Add(time.Second)
	second, err := syncplan.Decide(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.RefusedHolds).NotTo(Equal(second.RefusedHolds), "the message names the time")
	g.Expect(second.Topics[syncplan.TopicRefusedHolds]).To(Equal(first.Topics[syncplan.TopicRefusedHolds]))
	g.Expect(second.Events[0].Line).To(Equal(first.Events[0].Line))
}
