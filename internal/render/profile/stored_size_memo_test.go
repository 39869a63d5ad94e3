package profile

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// memoLandscape is a small landscape named by prefix: two CloudProfiles,
// prefix-a with two NamespacedCloudProfiles and prefix-b with one.
func memoLandscape(prefix string) []Object {
	a := cloudProfileObject("cp.yaml", prefix+"-a", withStagedImageVersions(2, 20))
	b := cloudProfileObject("cp.yaml", prefix+"-b", withStagedImageVersions(1, 10))
	return []Object{
		a, b,
		namespacedObject("ncp.yaml", prefix+"-a-1", prefix+"-a", nil),
		namespacedObject("ncp.yaml", prefix+"-a-2", prefix+"-a", nil),
		namespacedObject("ncp.yaml", prefix+"-b-1", prefix+"-b", nil),
	}
}

// memoNow is the instant the memo's tests validate at.
var memoNow = time.Date(2029, 6, 1, 0, 0, 0, 0, time.UTC)

// TestAPushEstimatesTheStoredSizeOfWhatChangedOnly: after a revision was
// validated, the next one estimates the stored size (the JSON with the
// status and the managed fields computed with structured-merge-diff) only of
// the objects whose stored form changed: a changed CloudProfile and the
// NamespacedCloudProfiles that merge it, or a changed NamespacedCloudProfile
// alone. The package's tests do
// not run in parallel, so the shared memo's count is this test's.
func TestAPushEstimatesTheStoredSizeOfWhatChangedOnly(t *testing.T) {
	for i, tc := range []struct {
		name string
		edit func(objects []Object)
		want int64
	}{
		{name: "an unchanged revision estimates nothing again", edit: func([]Object) {}, want: 0},
		{name: "a changed NamespacedCloudProfile estimates only it", edit: func(objects []Object) {
			spec := &objects[3].NamespacedCloudProfile.Spec
			spec.MachineTypes = append(spec.MachineTypes, machineType("pushed", "8"))
		}, want: 1},
		{name: "a changed CloudProfile estimates it and the namespaced profiles it is merged into", edit: func(objects []Object) {
			spec := &objects[0].CloudProfile.Spec
			spec.MachineTypes = append(spec.MachineTypes, machineType("pushed", "8"))
		}, want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			prefix := fmt.Sprintf("push-%d", i)
			first, err := Validate(memoLandscape(prefix), nil, memoNow)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(first.Problems).To(BeEmpty())

			pushed := memoLandscape(prefix)
			tc.edit(pushed)
			before := storedSizes.estimated.Load()
			second, err := Validate(pushed, nil, memoNow)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(second.Problems).To(BeEmpty())
			g.Expect(storedSizes.estimated.Load() - before).To(Equal(tc.want))
		})
	}
}

// memoEdits are the edits FuzzTheStoredSizeMemoKeepsEveryVerdictOfAColdEstimate
// applies to memoLandscape, each to the object an input byte names: the
// shapes a push gives (a new entry, metadata, a re-parented namespaced
// profile) and a providerConfig that takes a profile over, and back under,
// MaxStoredSize, so that verdicts both ways are compared.
var memoEdits = []func(o Object, step int, prefix string){
	func(o Object, step int, _ string) { // a new machine type
		name := fmt.Sprintf("type-%d", step)
		if o.CloudProfile != nil {
			o.CloudProfile.Spec.MachineTypes = append(o.CloudProfile.Spec.MachineTypes, machineType(name, "2"))
			return
		}
		o.NamespacedCloudProfile.Spec.MachineTypes = append(o.NamespacedCloudProfile.Spec.MachineTypes, machineType(name, "2"))
	},
	func(o Object, step int, _ string) { // a label
		labels := map[string]string{"step": fmt.Sprint(step)}
		if o.CloudProfile != nil {
			o.CloudProfile.SetLabels(labels)
			return
		}
		o.NamespacedCloudProfile.SetLabels(labels)
	},
	func(o Object, _ int, _ string) { // a CloudProfile too large to store
		if o.CloudProfile != nil {
			o.CloudProfile.Spec.ProviderConfig = withProviderConfigOf(MaxStoredSize).ProviderConfig
		}
	},
	func(o Object, _ int, _ string) { // a providerConfig that makes only the merged status too large
		if o.CloudProfile != nil {
			o.CloudProfile.Spec.ProviderConfig = withProviderConfigOf(MaxStoredSize / 2).ProviderConfig
		}
	},
	func(o Object, _ int, _ string) { // back under
		if o.CloudProfile != nil {
			o.CloudProfile.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"small":true}`)}
		}
	},
	func(o Object, step int, prefix string) { // the other parent
		if ncp := o.NamespacedCloudProfile; ncp != nil {
			ncp.Spec.Parent.Name = prefix + []string{"-a", "-b"}[step%2]
		}
	},
}

// FuzzTheStoredSizeMemoKeepsEveryVerdictOfAColdEstimate applies the edits
// its input names to a landscape, one revision after another, and checks
// that each revision's validation with the memo warmed by the revisions
// before gives the problems, and each object the stored size, that a cold
// estimate (an empty memo) gives.
func FuzzTheStoredSizeMemoKeepsEveryVerdictOfAColdEstimate(f *testing.F) {
	f.Add([]byte{0, 5, 11, 17, 2})
	f.Add([]byte{10, 3, 15, 20, 25, 4, 14})
	f.Add([]byte{1, 16, 21, 26, 6, 0})
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 8 {
			steps = steps[:8]
		}
		g := NewWithT(t)
		const prefix = "fuzz"
		objects := memoLandscape(prefix)
		for step, b := range steps {
			o := objects[int(b)%len(objects)]
			memoEdits[int(b)/len(objects)%len(memoEdits)](o, step, prefix)

			warm, err := Validate(objects, nil, memoNow)
			g.Expect(err).NotTo(HaveOccurred())
			parents := map[string]string{}
			for _, o := range objects {
				if o.CloudProfile != nil {
					parents[o.Name()] = specDigest(WithServerDefaults(&o.CloudProfile.Spec))
				}
			}
			for _, o := range objects {
				var merged *v1alpha1.CloudProfileSpec
				mergedFrom := ""
				if o.NamespacedCloudProfile != nil {
					if merged = warm.MergedSpec(o.NamespacedCloudProfile); merged != nil {
						mergedFrom = parents[o.NamespacedCloudProfile.Spec.Parent.Name]
					}
				}
				remembered, rememberedErr := storedSizes.size(o, merged, mergedFrom)
				cold, coldErr := storedSize(o, merged)
				g.Expect(rememberedErr).NotTo(HaveOccurred())
				g.Expect(coldErr).NotTo(HaveOccurred())
				g.Expect(remembered).To(Equal(cold), "step %d: %s", step, o.Ref())
			}

			shared := storedSizes
			storedSizes = newStoredSizeMemo()
			coldReport, err := Validate(objects, nil, memoNow)
			storedSizes = shared
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(warm.Problems.Lines()).To(Equal(coldReport.Problems.Lines()), "step %d", step)
		}
	})
}

// pushLandscape is the shape of test/bench's landscape: cloudProfiles
// CloudProfiles of 600 versions (6 images of 100, two stages each) and ten
// NamespacedCloudProfiles each. A push moves the expiry of a version of the
// first CloudProfile, shifted by push hours.
func pushLandscape(cloudProfiles, push int) []Object {
	var objects []Object
	for i := range cloudProfiles {
		spec := withStagedImageVersions(6, 100)
		if i == 0 {
			lifecycle := spec.MachineImages[0].Versions[0].Lifecycle
			lifecycle[len(lifecycle)-1].StartTime.Time = lifecycle[len(lifecycle)-1].StartTime.Add(time.Duration(push) * time.Hour)
		}
		objects = append(objects, cloudProfileObject("cp.yaml", fmt.Sprintf("bench-cp-%03d", i), spec))
	}
	for j := range 10 * cloudProfiles {
		objects = append(objects, namespacedObject("ncp.yaml", fmt.Sprintf("bench-ncp-%04d", j), fmt.Sprintf("bench-cp-%03d", j%cloudProfiles), nil))
	}
	return objects
}

// BenchmarkValidateAPush validates the revision of a push to the bench
// landscape (10 CloudProfiles of 600 versions, 100 NamespacedCloudProfiles)
// after the revision before it: "remembered" with the stored sizes and the
// validations of the unchanged objects kept (what a sync does), "cold" with
// empty memos at each revision (what it did before). memo-MiB is what the
// validation memo holds after the last revision.
func BenchmarkValidateAPush(b *testing.B) {
	for _, warm := range []bool{true, false} {
		name := map[bool]string{true: "remembered", false: "cold"}[warm]
		b.Run(name, func(b *testing.B) {
			sharedSizes, sharedValidations := storedSizes, validations
			defer func() { storedSizes, validations = sharedSizes, sharedValidations }()
			storedSizes = newStoredSizeMemo()
			validations = newValidationMemo(ValidationMemoBytes)
			if _, err := Validate(pushLandscape(10, 0), nil, memoNow); err != nil {
				b.Fatal(err)
			}
			revisions := make([][]Object, b.N)
			for n := range b.N {
				revisions[n] = pushLandscape(10, n+1)
			}
			b.ResetTimer()
			for n := range b.N {
				if !warm {
					storedSizes = newStoredSizeMemo()
					validations = newValidationMemo(ValidationMemoBytes)
				}
				if _, err := Validate(revisions[n], nil, memoNow); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			memoBytes, _ := validations.size()
			b.ReportMetric(float64(memoBytes)/(1<<20), "memo-MiB")
		})
	}
}
