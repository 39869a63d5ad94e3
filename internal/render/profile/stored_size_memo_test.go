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

// TestAPushEstimatesTheManagedFieldsOfWhatChangedOnly: after a revision was
// validated, the next one computes the managed fields (the structured-merge-
// diff part of the stored-size estimate) only of the objects whose stored
// form changed: a changed CloudProfile and the NamespacedCloudProfiles that
// merge it, or a changed NamespacedCloudProfile alone. The package's tests do
// not run in parallel, so the shared memo's count is this test's.
func TestAPushEstimatesTheManagedFieldsOfWhatChangedOnly(t *testing.T) {
	for i, tc := range []struct {
		name string
		edit func(objects []Object)
		want int64
	}{
		{name: "an unchanged revision computes nothing again", edit: func([]Object) {}, want: 0},
		{name: "a changed NamespacedCloudProfile computes only it", edit: func(objects []Object) {
			spec := &objects[3].NamespacedCloudProfile.Spec
			spec.MachineTypes = append(spec.MachineTypes, machineType("pushed", "8"))
		}, want: 1},
		{name: "a changed CloudProfile computes it and the namespaced profiles it is merged into", edit: func(objects []Object) {
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
			before := storedSizeFields.computed.Load()
			second, err := Validate(pushed, nil, memoNow)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(second.Problems).To(BeEmpty())
			g.Expect(storedSizeFields.computed.Load() - before).To(Equal(tc.want))
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
		meta := o.CloudProfile.GetObjectMeta()
		if o.NamespacedCloudProfile != nil {
			meta = o.NamespacedCloudProfile.GetObjectMeta()
		}
		meta.SetLabels(map[string]string{"step": fmt.Sprint(step)})
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
			cold := newManagedFieldsMemo(managedFieldsMemoEntries)
			for _, o := range objects {
				var merged *v1alpha1.CloudProfileSpec
				if o.NamespacedCloudProfile != nil {
					merged = warm.MergedSpec(o.NamespacedCloudProfile)
				}
				warmSize, warmErr := storedSize(o, merged)
				coldSize, coldErr := storedSizeWith(cold, o, merged)
				g.Expect(warmErr).NotTo(HaveOccurred())
				g.Expect(coldErr).NotTo(HaveOccurred())
				g.Expect(warmSize).To(Equal(coldSize), "step %d: %s", step, o.Ref())
			}

			shared := storedSizeFields
			storedSizeFields = newManagedFieldsMemo(managedFieldsMemoEntries)
			coldReport, err := Validate(objects, nil, memoNow)
			storedSizeFields = shared
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(warm.Problems.Lines()).To(Equal(coldReport.Problems.Lines()), "step %d", step)
		}
	})
}
