package profile

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

func TestNextChangeIsTheFirstInstantOfAnySpecTheValidationRead(t *testing.T) {
	now := builders.Time("2026-06-01T00:00:00Z")
	withVersions := func(versions ...v1alpha1.ExpirableVersion) v1alpha1.CloudProfileSpec {
		return builders.WithRequiredLists(v1alpha1.CloudProfileSpec{Type: "local", Kubernetes: v1alpha1.KubernetesSettings{Versions: versions}})
	}
	cloudProfile := func(name string, spec v1alpha1.CloudProfileSpec) Object {
		return Object{File: "p.yaml", CloudProfile: &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}}
	}
	namespaced := func(parent string, versions ...v1alpha1.ExpirableVersion) Object {
		ncp := &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: "team-a"}}
		ncp.Spec.Parent = v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: parent}
		if len(versions) > 0 {
			ncp.Spec.Kubernetes = &v1alpha1.KubernetesSettings{Versions: versions}
		}
		return Object{File: "n.yaml", NamespacedCloudProfile: ncp}
	}
	stage, staged := builders.Stage, builders.Staged
	preview, supported, deprecated := v1alpha1.ClassificationPreview, v1alpha1.ClassificationSupported, v1alpha1.ClassificationDeprecated
	onCluster := withVersions(builders.PlainVersion("1.31.0"),
		staged("1.32.0", stage(preview, ""), stage(supported, "2026-07-01T00:00:00Z")))
	lookup := func(name string) (*v1alpha1.CloudProfileSpec, bool, error) {
		if name == "on-cluster" {
			return &onCluster, true, nil
		}
		return nil, false, nil
	}
	for _, tt := range []struct {
		name    string
		objects []Object
		want    string // "" for none
	}{
		{name: "a set without a dated stage has none", objects: []Object{cloudProfile("aws", withVersions(builders.PlainVersion("1.31.0")))}},
		{name: "the first stage start after now of a CloudProfile", objects: []Object{cloudProfile("aws", withVersions(
			staged("1.31.0", stage(supported, "2026-01-01T00:00:00Z"), stage(deprecated, "2026-09-01T00:00:00Z")),
			staged("1.32.0", stage(preview, ""), stage(supported, "2026-08-01T00:00:00Z"))))},
			want: "2026-08-01T00:00:00Z"},
		{name: "an expirationDate of the deprecated API", objects: []Object{cloudProfile("aws", withVersions(
			builders.PlainVersion("1.32.0"), builders.DeprecatedAPIVersion("1.31.0", supported, "2026-06-15T00:00:00Z")))},
			want: "2026-06-15T00:00:00Z"},
		{name: "a parent looked up on the cluster", objects: []Object{namespaced("on-cluster")}, want: "2026-07-01T00:00:00Z"},
		{name: "a namespaced profile's own override", objects: []Object{namespaced("on-cluster",
			staged("1.32.0", stage(preview, ""), stage(supported, "2026-06-20T00:00:00Z")))}, want: "2026-06-20T00:00:00Z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			set, err := Validate(tt.objects, lookup, now)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(set.Problems).To(BeEmpty())
			got, ok := set.NextChange()
			if tt.want == "" {
				g.Expect(ok).To(BeFalse())
				return
			}
			g.Expect(ok).To(BeTrue())
			g.Expect(got).To(BeTemporally("==", builders.Time(tt.want)))
		})
	}
}

// TestAVerdictDoesNotChangeBeforeTheInstantNextChangeNames: overlapping
// supported windows are a warning while the overlap lasts; validated again
// at any time before the first named instant, the same set concludes the
// same, and at that instant it may not.
func TestAVerdictDoesNotChangeBeforeTheInstantNextChangeNames(t *testing.T) {
	g := NewWithT(t)
	stage, staged := builders.Stage, builders.Staged
	spec := builders.WithRequiredLists(v1alpha1.CloudProfileSpec{Type: "local", Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
		staged("1.31.0", stage(v1alpha1.ClassificationSupported, "2026-01-01T00:00:00Z"), stage(v1alpha1.ClassificationDeprecated, "2026-07-01T00:00:00Z")),
		staged("1.31.1", stage(v1alpha1.ClassificationSupported, "2026-06-01T00:00:00Z"), stage(v1alpha1.ClassificationDeprecated, "2026-12-01T00:00:00Z")),
		builders.PlainVersion("1.32.0"),
	}}})
	objects := []Object{{File: "p.yaml", CloudProfile: &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Spec: spec}}}
	now := builders.Time("2026-05-01T00:00:00Z")
	first, err := Validate(objects, nil, now)
	g.Expect(err).NotTo(HaveOccurred())
	next, ok := first.NextChange()
	g.Expect(ok).To(BeTrue())
	g.Expect(next).To(BeTemporally("==", builders.Time("2026-06-01T00:00:00Z")))
	before, err := Validate(objects, nil, next.Add(-time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(before.Problems).To(Equal(first.Problems))
	g.Expect(before.Warnings).To(Equal(first.Warnings))
}
