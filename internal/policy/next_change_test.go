package policy

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/profile"
)

func TestNextChangeIsTheFirstInstantAtWhichTheFindingsMayChange(t *testing.T) {
	spec := kubernetes(
		supportedUntil("1.32.4", "2027-01-31T00:00:00Z", "2027-06-01T00:00:00Z"),
		lc("1.33.0", stage(preview, "2026-12-01T00:00:00Z"), stage(supported, "2027-01-31T00:00:00Z")),
		old("1.30.9", expired, "2026-12-24T00:00:00Z"),
	)
	head := []profile.Object{cloudProfile("aws", spec)}
	supportedRule := Rules{Supported: &SupportedRule{Severity: SeverityError, Minors: 2}}
	for _, tt := range []struct {
		name   string
		policy *Policy
		from   string
		want   string // "" for none
	}{
		{name: "the first stage start after from", policy: &Policy{Rules: supportedRule}, from: now, want: "2026-12-01T00:00:00Z"},
		{name: "an expirationDate counts as an instant", policy: &Policy{Rules: supportedRule}, from: "2026-12-01T00:00:00Z", want: "2026-12-24T00:00:00Z"},
		{name: "the end of a preview's allowed days counts when the preview rule is set",
			policy: &Policy{Rules: Rules{Preview: &PreviewRule{Severity: SeverityError, MaxDays: intPtr(10)}}}, from: "2026-12-01T00:00:00Z", want: "2026-12-11T00:00:00Z"},
		{name: "an instant at from is not after it", policy: &Policy{Rules: supportedRule}, from: "2027-01-31T00:00:00Z", want: "2027-06-01T00:00:00Z"},
		{name: "after the last instant nothing changes", policy: &Policy{Rules: supportedRule}, from: "2027-06-01T00:00:00Z"},
		{name: "no policy, nothing to change", from: now},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := tt.policy.NextChange(head, at(tt.from))
			if tt.want == "" {
				g.Expect(ok).To(BeFalse())
				return
			}
			g.Expect(ok).To(BeTrue())
			g.Expect(got).To(BeTemporally("==", at(tt.want)))
		})
	}
	t.Run("nothing changes between from and the instant it names", func(t *testing.T) {
		g := NewWithT(t)
		p := &Policy{Rules: supportedRule}
		next, ok := p.NextChange(head, at(now))
		g.Expect(ok).To(BeTrue())
		g.Expect(p.Check(head, nil, next.Add(-time.Second), at(now))).To(Equal(p.Check(head, nil, at(now), at(now))))
	})
}
