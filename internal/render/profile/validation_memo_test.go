package profile

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// laterStaged moves every lifecycle stage of spec by years, so that its
// instants are not those of memoLandscape's other profile.
func laterStaged(spec *v1alpha1.CloudProfileSpec, years int) {
	for i := range spec.MachineImages {
		for j := range spec.MachineImages[i].Versions {
			for k := range spec.MachineImages[i].Versions[j].Lifecycle {
				stage := &spec.MachineImages[i].Versions[j].Lifecycle[k]
				moved := metav1.NewTime(stage.StartTime.AddDate(years, 0, 0))
				stage.StartTime = &moved
			}
		}
	}
}

// TestAPushValidatesWhatChangedOnly: after a revision was validated, the
// next validation runs the rules that read the time (the lifecycle rules of
// a CloudProfile, the merge of a NamespacedCloudProfile with its parent and
// the rules of the merged spec) only for the objects whose inputs changed
// or whose instants the clock crossed since. prefix-a's stages start on
// 2030-01-01 and 2031-01-01, prefix-b's three years later. (Namespaced
// profiles of the same spec and parent share one outcome.) The package's
// tests do not run in parallel, so the memo's count is this test's.
func TestAPushValidatesWhatChangedOnly(t *testing.T) {
	for i, tc := range []struct {
		name string
		edit func(objects []Object)
		at   time.Time
		want int64
	}{
		{name: "an unchanged revision validates nothing again", edit: func([]Object) {}, at: memoNow, want: 0},
		{name: "a changed NamespacedCloudProfile validates only it", edit: func(objects []Object) {
			spec := &objects[3].NamespacedCloudProfile.Spec
			spec.MachineTypes = append(spec.MachineTypes, machineType("pushed", "8"))
		}, at: memoNow, want: 1},
		{name: "a changed CloudProfile validates it and the namespaced profiles merged with it", edit: func(objects []Object) {
			spec := &objects[0].CloudProfile.Spec
			spec.MachineTypes = append(spec.MachineTypes, machineType("pushed", "8"))
		}, at: memoNow, want: 3},
		{name: "a clock move that crosses no instant validates nothing again", edit: func([]Object) {},
			at: memoNow.AddDate(0, 3, 0), want: 0},
		{name: "a clock move past a stage start validates the objects whose instant it crossed", edit: func([]Object) {},
			at: time.Date(2030, 1, 1, 0, 0, 0, 1, time.UTC), want: 3},
		{name: "a clock move onto a stage start validates the objects of that instant", edit: func([]Object) {},
			at: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), want: 3},
		{name: "a clock move past every instant validates every object", edit: func([]Object) {},
			at: time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC), want: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			// A memo of this test's own: other tests validate the same specs.
			shared := validations
			validations = newValidationMemo(ValidationMemoBytes)
			defer func() { validations = shared }()
			landscape := func() []Object {
				objects := memoLandscape(fmt.Sprintf("validate-%d", i))
				laterStaged(&objects[1].CloudProfile.Spec, 3)
				// Namespaced profiles of the same spec and parent are one
				// outcome: each gets a machine type of its own.
				for _, o := range objects {
					if ncp := o.NamespacedCloudProfile; ncp != nil {
						ncp.Spec.MachineTypes = append(ncp.Spec.MachineTypes, machineType(ncp.Name, "2"))
					}
				}
				return objects
			}
			first, err := Validate(landscape(), nil, memoNow)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(first.Problems).To(BeEmpty())

			pushed := landscape()
			tc.edit(pushed)
			before := validations.validated.Load()
			second, err := Validate(pushed, nil, tc.at)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(second.Problems).To(BeEmpty())
			g.Expect(validations.validated.Load() - before).To(Equal(tc.want))
		})
	}
}

// memoClock are the times FuzzTheValidationMemoKeepsEveryVerdictOfAColdValidation
// validates at: before, on and just after memoLandscape's stage starts
// (2030-01-01, 2031-01-01) and the instants its edits write, and long after
// all of them.
var memoClock = []time.Time{
	memoNow,
	time.Date(2029, 12, 31, 23, 59, 59, 999999999, time.UTC),
	time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2030, 1, 1, 0, 0, 0, 1, time.UTC),
	time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2031, 6, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2045, 1, 1, 0, 0, 0, 0, time.UTC),
}

// lifecycleEdits are the edits of the fuzz target that write instants, each
// at a time of memoClock: a second supported version of a minor from then
// (the "one supported version per minor" rules), an expiry of a parent's
// version, and a namespaced profile's override of a parent version's expiry,
// of a machine image's and a Kubernetes version's (which Gardener drops when
// it is expired at creation).
var lifecycleEdits = []func(o Object, step int, at time.Time){
	func(o Object, step int, at time.Time) { // a second supported version of minor 0.0
		if cp := o.CloudProfile; cp != nil {
			image := &cp.Spec.MachineImages[0]
			image.Versions = append(image.Versions, v1alpha1.MachineImageVersion{
				ExpirableVersion: staged(fmt.Sprintf("0.0.%d", step+1), stage(v1alpha1.ClassificationSupported, at.Format(time.RFC3339Nano))),
				Architectures:    []string{"amd64"},
			})
		}
	},
	func(o Object, _ int, at time.Time) { // an expiry of a parent's version
		if cp := o.CloudProfile; cp != nil {
			expiry := metav1.NewTime(at)
			cp.Spec.MachineImages[0].Versions[0].ExpirationDate = &expiry
		}
	},
	func(o Object, _ int, at time.Time) { // a namespaced profile's expiry of its parent's image version
		if ncp := o.NamespacedCloudProfile; ncp != nil {
			expiry := metav1.NewTime(at)
			ncp.Spec.MachineImages = []v1alpha1.NamespacedMachineImage{{Name: "image-0", Versions: []v1alpha1.MachineImageVersion{
				{ExpirableVersion: v1alpha1.ExpirableVersion{Version: "0.0.0", ExpirationDate: &expiry}},
			}}}
		}
	},
	func(o Object, _ int, at time.Time) { // a namespaced profile's expiry of its parent's Kubernetes version
		if ncp := o.NamespacedCloudProfile; ncp != nil {
			expiry := metav1.NewTime(at)
			ncp.Spec.Kubernetes = &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
				{Version: "1.30.0", ExpirationDate: &expiry},
			}}
		}
	},
}

// FuzzTheValidationMemoKeepsEveryVerdictOfAColdValidation applies the edits
// its input names to a landscape, one revision after another, each
// validated at a time the input picks (forwards and backwards, across stage
// starts and expiries), and checks that each validation with the memo warmed
// by the ones before gives exactly what a cold one (an empty memo) gives at
// the same time: the problems, the warnings, the merged specs and statuses
// (Evaluate) and the next instant of a change (NextChange). Each step takes
// two bytes: the edit and its object, then the time.
func FuzzTheValidationMemoKeepsEveryVerdictOfAColdValidation(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 5, 4, 0, 2})
	f.Add([]byte{2, 2, 45, 3, 47, 4, 0, 7, 0, 1})
	f.Add([]byte{31, 5, 53, 2, 34, 3, 0, 6, 1, 0})
	f.Add([]byte{10, 1, 3, 2, 20, 3, 25, 5, 4, 6})
	// A second supported version of a minor from 2030-01-01, then a clock
	// move past it; an expiry in 2030-06, then a move past it; a namespaced
	// profile's expiry on 2030-01-01, then a move past it.
	f.Add([]byte{130, 0, 12, 4})
	f.Add([]byte{236, 0, 12, 6})
	f.Add([]byte{142, 0, 13, 5})
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 16 {
			steps = steps[:16]
		}
		g := NewWithT(t)
		const prefix = "fuzz-validation"
		objects := memoLandscape(prefix)
		edits := len(memoEdits) + len(lifecycleEdits)
		for step := 0; step+1 < len(steps); step += 2 {
			b, at := int(steps[step]), memoClock[int(steps[step+1])%len(memoClock)]
			o := objects[b%len(objects)]
			if edit := b / len(objects) % edits; edit < len(memoEdits) {
				memoEdits[edit](o, step, prefix)
			} else {
				lifecycleEdits[edit-len(memoEdits)](o, step, memoClock[(b/len(objects)/edits)%len(memoClock)])
			}

			warm, err := Validate(objects, nil, at)
			g.Expect(err).NotTo(HaveOccurred())
			shared := validations
			validations = newValidationMemo(ValidationMemoBytes)
			cold, err := Validate(objects, nil, at)
			validations = shared
			g.Expect(err).NotTo(HaveOccurred())

			g.Expect(warm.Problems.Lines()).To(Equal(cold.Problems.Lines()), "step %d at %s", step, at)
			g.Expect(warm.Warnings.Lines()).To(Equal(cold.Warnings.Lines()), "step %d at %s", step, at)
			g.Expect(warm.Evaluate()).To(Equal(cold.Evaluate()), "step %d at %s", step, at)
			warmNext, warmOK := warm.NextChange()
			coldNext, coldOK := cold.NextChange()
			g.Expect(warmOK).To(Equal(coldOK), "step %d at %s", step, at)
			g.Expect(warmNext).To(Equal(coldNext), "step %d at %s", step, at)
		}
	})
}

// TestTheValidationMemoKeepsToItsBytes: entries beyond the memo's bytes push
// out the least recently used ones, and an entry larger than the bound
// alone is not kept.
func TestTheValidationMemoKeepsToItsBytes(t *testing.T) {
	g := NewWithT(t)
	spec := withStagedImageVersions(1, 20)
	one := newValidationMemo(1 << 30)
	one.specAt(spec, specDigest(spec), nil, memoNow)
	entryBytes, _ := one.size()
	g.Expect(entryBytes).To(BeNumerically(">", 0))

	memo := newValidationMemo(3 * entryBytes)
	for i := range 5 {
		spec := withStagedImageVersions(1, 20)
		spec.Type = fmt.Sprintf("type-%d", i) // same size, another digest
		memo.specAt(spec, specDigest(spec), nil, memoNow)
	}
	bytes, entries := memo.size()
	g.Expect(bytes).To(BeNumerically("<=", 3*entryBytes))
	g.Expect(entries).To(Equal(3))

	tooSmall := newValidationMemo(entryBytes - 1)
	tooSmall.specAt(spec, specDigest(spec), nil, memoNow)
	bytes, entries = tooSmall.size()
	g.Expect(bytes).To(BeZero())
	g.Expect(entries).To(BeZero())
}

// TestAnInstantCellHoldsTheTimesOnTheSameSideOfEveryInstant: the times an
// outcome stands for, table by table of instants around the time it was
// computed at.
func TestAnInstantCellHoldsTheTimesOnTheSameSideOfEveryInstant(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2030, 1, d, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name     string
		instants []time.Time
		at       time.Time
		holds    []time.Time
		fails    []time.Time
	}{
		{name: "no instant holds every time", at: day(5), holds: []time.Time{day(1), day(5), day(30)}},
		{name: "between two instants holds the open interval", instants: []time.Time{day(2), day(9)}, at: day(5),
			holds: []time.Time{day(2).Add(1), day(5), day(9).Add(-1)}, fails: []time.Time{day(2), day(9), day(1), day(10)}},
		{name: "on an instant holds that time only", instants: []time.Time{day(5), day(9)}, at: day(5),
			holds: []time.Time{day(5)}, fails: []time.Time{day(5).Add(1), day(5).Add(-1), day(8)}},
		{name: "after every instant holds every later time", instants: []time.Time{day(2)}, at: day(5),
			holds: []time.Time{day(3), day(30)}, fails: []time.Time{day(2), day(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			instants := instantAfter{after: tc.at}
			for _, instant := range tc.instants {
				instants.consider(instant)
			}
			cell := instants.cell()
			for _, at := range tc.holds {
				g.Expect(cell.holds(at)).To(BeTrue(), "%s", at)
			}
			for _, at := range tc.fails {
				g.Expect(cell.holds(at)).To(BeFalse(), "%s", at)
			}
		})
	}
}
