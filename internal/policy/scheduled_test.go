package policy

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/profile"
)

func TestScheduledErrorsAreTheErrorsTimeBringsWithinTheHorizon(t *testing.T) {
	supportedRule := Rules{Supported: &SupportedRule{Severity: SeverityError, Minors: 2}}
	// 1.33.2 is deprecated on 2027-01-31 with nothing to take over: from
	// then on minor 1.33 has no supported patch.
	endsAlone := kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.2", "2027-01-31T00:00:00Z", "2027-06-01T00:00:00Z"))
	// 1.33.3 takes over at the same instant: the rule holds throughout.
	takenOver := kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.2", "2027-01-31T00:00:00Z", "2027-06-01T00:00:00Z"),
		lc("1.33.3", stage(preview, ""), stage(supported, "2027-01-31T00:00:00Z")))
	for _, tt := range []struct {
		name  string
		rules Rules
		spec  string
		until string
		want  []string
	}{
		{
			name: "an error rule broken from a later date is reported with that date", rules: supportedRule, spec: "endsAlone", until: "2027-06-01T00:00:00Z",
			want: []string{"base/cloudprofiles.yaml: CloudProfile/aws: spec.kubernetes.versions[1]: from 2027-01-31T00:00:00Z (70d after 2026-11-22T00:00:00Z) " +
				"the operator refuses every revision with this: policy supported: minor 1.33 has no supported patch; each of the newest 2 minors needs exactly one"},
		},
		{name: "a breach after the horizon is not reported", rules: supportedRule, spec: "endsAlone", until: "2027-01-30T00:00:00Z"},
		{name: "a breach on the horizon's last instant is reported", rules: supportedRule, spec: "endsAlone", until: "2027-01-31T00:00:00Z",
			want: []string{"base/cloudprofiles.yaml: CloudProfile/aws: spec.kubernetes.versions[1]: from 2027-01-31T00:00:00Z (70d after 2026-11-22T00:00:00Z) " +
				"the operator refuses every revision with this: policy supported: minor 1.33 has no supported patch; each of the newest 2 minors needs exactly one"}},
		{name: "a takeover at the same instant breaks nothing", rules: supportedRule, spec: "takenOver", until: "2027-06-01T00:00:00Z"},
		{name: "a rule of severity warning schedules no refusal", rules: Rules{Supported: &SupportedRule{Severity: SeverityWarning, Minors: 2}}, spec: "endsAlone", until: "2027-06-01T00:00:00Z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := map[string]profile.Object{"endsAlone": cloudProfile("aws", endsAlone), "takenOver": cloudProfile("aws", takenOver)}[tt.spec]
			p := &Policy{Rules: tt.rules}
			got := p.ScheduledErrors([]profile.Object{spec}, at(now), at(tt.until))
			if tt.want == nil {
				g.Expect(got).To(BeEmpty())
			} else {
				g.Expect(got.Lines()).To(Equal(tt.want))
			}
			g.Expect(p.Check([]profile.Object{spec}, nil, at(now), at(now)).Errors).To(BeEmpty(), "nothing is broken at now")
		})
	}
}

func TestScheduledErrorsLeaveTheErrorsOfNowToCheck(t *testing.T) {
	g := NewWithT(t)
	p := &Policy{Rules: Rules{Supported: &SupportedRule{Severity: SeverityError, Minors: 1}}}
	broken := []profile.Object{cloudProfile("aws", kubernetes(supportedUntil("1.33.1", "", ""), supportedUntil("1.33.2", "", "")))}
	g.Expect(p.Check(broken, nil, at(now), at(now)).Errors).To(HaveLen(1))
	g.Expect(p.ScheduledErrors(broken, at(now), at("2027-06-01T00:00:00Z"))).To(BeEmpty())
	var none *Policy
	g.Expect(none.ScheduledErrors(broken, at(now), at("2027-06-01T00:00:00Z"))).To(BeEmpty())
}
