package prdiff

import (
	"testing"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

func TestCompare(t *testing.T) {
	supportedFrom := func(start string) []profile.Object {
		return []profile.Object{cloudProfile("aws", withKubernetes(builders.Staged("1.30.0",
			builders.Stage(v1alpha1.ClassificationPreview, ""), builders.Stage(v1alpha1.ClassificationSupported, start))))}
	}
	// The change supports 1.30.0 in prod a month before dev, the other way
	// round than in the base.
	landscapes := []LandscapeSides{
		{Name: "dev", Base: supportedFrom("2026-02-01T00:00:00Z"), Head: supportedFrom("2026-03-01T00:00:00Z")},
		{Name: "prod", Base: supportedFrom("2026-03-01T00:00:00Z"), Head: supportedFrom("2026-02-01T00:00:00Z")},
	}
	g := NewWithT(t)
	report := Compare("main", "1a2b3c4", landscapes, diffNow, DefaultHorizon)
	g.Expect(report.Base).To(Equal("main"))
	g.Expect(report.Head).To(Equal("1a2b3c4"))
	g.Expect(report.Landscapes).To(Equal([]LandscapeDiff{
		Diff("dev", landscapes[0].Base, landscapes[0].Head, diffNow, DefaultHorizon),
		Diff("prod", landscapes[1].Base, landscapes[1].Head, diffNow, DefaultHorizon),
	}))
	g.Expect(report.Landscapes[0].Profiles).To(HaveLen(1), "each landscape's own sides are compared")
	g.Expect(report.RolloutWarnings).To(BeNil(), "the rollout order is the caller's to check")
}
