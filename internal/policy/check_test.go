package policy

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
)

func cloudProfile(name string, spec *v1alpha1.CloudProfileSpec) profile.Object {
	return profile.Object{File: "base/cloudprofiles.yaml", CloudProfile: &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: *spec}}
}

// namespaced is an evaluated NamespacedCloudProfile: merged is its
// status.cloudProfileSpec.
func namespaced(parent string, merged *v1alpha1.CloudProfileSpec) profile.Object {
	ncp := &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: "team-a"}}
	ncp.Spec.Parent = v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: parent}
	ncp.Status.CloudProfileSpec = merged
	return profile.Object{File: "base/namespaced.yaml", NamespacedCloudProfile: ncp}
}

func TestCheckReportsEachFindingOnceWhereItIsFixed(t *testing.T) {
	g := NewWithT(t)
	p := &Policy{Rules: Rules{
		Supported: &SupportedRule{Severity: SeverityError, Minors: 2},
		Notice:    &NoticeRule{Severity: SeverityWarning, Days: 30},
	}}
	parent := kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.1", "2026-12-01T00:00:00Z", "2027-06-01T00:00:00Z"), lc("1.33.2", stage(preview, ""), stage(supported, "2026-12-01T00:00:00Z")))
	// The namespace keeps 1.33.1 supported longer: two supported patches,
	// and an expiry brought forward on short notice, both its own.
	merged := kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.1", "2027-01-01T00:00:00Z", "2027-01-02T00:00:00Z"), lc("1.33.2", stage(preview, ""), stage(supported, "2026-12-01T00:00:00Z")))
	baseMerged := kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.1", "2027-01-01T00:00:00Z", "2027-06-01T00:00:00Z"), lc("1.33.2", stage(preview, ""), stage(supported, "2026-12-01T00:00:00Z")))
	head := []profile.Object{cloudProfile("aws", parent), namespaced("aws", merged)}
	base := []profile.Object{cloudProfile("aws", parent), namespaced("aws", baseMerged)}

	findings := p.Check(head, base, at("2026-12-15T00:00:00Z"), at("2026-12-14T00:00:00Z"))
	g.Expect(findings.Errors.Lines()).To(Equal([]string{
		"base/namespaced.yaml: NamespacedCloudProfile/team-a/team: status.cloudProfileSpec.kubernetes.versions[1]: " +
			"policy supported: 1.33.1 is supported as well as 1.33.2; minor 1.33 needs exactly one supported patch",
	}))
	g.Expect(findings.Warnings.Lines()).To(Equal([]string{
		"base/namespaced.yaml: NamespacedCloudProfile/team-a/team: status.cloudProfileSpec.kubernetes.versions[1].lifecycle[2].startTime: " +
			"policy notice: 1.33.1 becomes expired on 2027-01-02T00:00:00Z, 19d after the commit (2026-12-14T00:00:00Z) (was 2027-06-01T00:00:00Z); the policy requires 30d notice, so not before 2027-01-13T00:00:00Z",
	}))

	// Without a base the notice rule has nothing to compare.
	findings = p.Check(head, nil, at("2026-12-15T00:00:00Z"), at("2026-12-14T00:00:00Z"))
	g.Expect(findings.Warnings).To(BeEmpty())

	// The parent's own breach is reported on the parent alone.
	broken := kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.1", "", ""), supportedUntil("1.33.2", "", ""))
	findings = p.Check([]profile.Object{cloudProfile("aws", broken), namespaced("aws", broken)}, nil, at("2026-12-15T00:00:00Z"), at("2026-12-15T00:00:00Z"))
	g.Expect(findings.Errors.Lines()).To(Equal([]string{
		"base/cloudprofiles.yaml: CloudProfile/aws: spec.kubernetes.versions[1]: policy supported: 1.33.1 is supported as well as 1.33.2; minor 1.33 needs exactly one supported patch",
	}))
	g.Expect(findings.Empty()).To(BeFalse())

	var none *Policy
	g.Expect(none.Check(head, base, at(now), at(now)).Empty()).To(BeTrue(), "a landscape without a policy has no findings")
}

func TestTimelineListsWhenTheProfilesStopSatisfyingThePolicy(t *testing.T) {
	g := NewWithT(t)
	p := &Policy{Rules: Rules{
		Supported:   &SupportedRule{Severity: SeverityError, Minors: 2},
		Preview:     &PreviewRule{Severity: SeverityWarning, MaxDays: intPtr(30)},
		Deprecation: &DeprecationRule{Severity: SeverityWarning, RequireExpiry: true},
	}}
	spec := kubernetes(
		supportedUntil("1.32.4", "", ""),
		supportedUntil("1.33.2", "2027-01-31T00:00:00Z", "2027-06-01T00:00:00Z"),
		lc("1.34.0", stage(preview, "2026-12-01T00:00:00Z")),
		old("1.31.9", deprecated, ""),
	)
	head := []profile.Object{cloudProfile("aws", spec)}
	var got []string
	for _, f := range p.Timeline(head, at(now), at("2027-12-31T00:00:00Z")) {
		got = append(got, formatTime(f.At)+" "+string(f.Severity)+" "+f.Problem.Field+": "+f.Problem.Message)
	}
	g.Expect(got).To(Equal([]string{
		now + " warning spec.kubernetes.versions[3].classification: policy deprecation: 1.31.9 is deprecated since always but never expires; give it an expiry",
		"2026-12-31T00:00:00Z warning spec.kubernetes.versions[2].lifecycle[0].startTime: policy preview: minor 1.34 has been in preview since 2026-12-01T00:00:00Z, 30d or longer, and no version of it is scheduled to become supported; the policy allows at most 30d",
		"2027-01-31T00:00:00Z error spec.kubernetes.versions[1]: policy supported: minor 1.33 has no supported patch; each of the newest 2 minors needs exactly one",
	}))

	g.Expect(p.Timeline(head, at(now), at("2027-01-30T00:00:00Z"))).To(HaveLen(2), "--until bounds the instants")
}

func TestAFindingOfAFieldAPatchSetNamesThePatch(t *testing.T) {
	g := NewWithT(t)
	p := &Policy{Rules: Rules{Supported: &SupportedRule{Severity: SeverityError, Minors: 2}}}
	broken := kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.1", "", ""), supportedUntil("1.33.2", "", ""))
	patched := cloudProfile("aws", broken)
	patched.SetBy = []profile.FieldSource{{Field: "spec.kubernetes.versions[1]", File: "overlays/dev/kustomization.yaml", Patch: "patches[0], entry spec.kubernetes.versions (1.33.1)"}}
	findings := p.Check([]profile.Object{patched}, nil, at("2026-12-15T00:00:00Z"), at("2026-12-15T00:00:00Z"))
	g.Expect(findings.Errors.Lines()).To(Equal([]string{
		"overlays/dev/kustomization.yaml: CloudProfile/aws: spec.kubernetes.versions[1]: policy supported: 1.33.1 is supported as well as 1.33.2; minor 1.33 needs exactly one supported patch " +
			"(set by patches[0], entry spec.kubernetes.versions (1.33.1), on the object of base/cloudprofiles.yaml)",
	}))
}
