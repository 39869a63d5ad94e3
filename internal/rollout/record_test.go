package rollout

import (
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

const (
	recordSource   = "refs/profilesync/landscapes/dev@0123456789abcdef0123456789abcdef01234567"
	recordRevision = "89abcdef0123456789abcdef0123456789abcdef"
)

func goodRecordFile() string {
	return `{
  "version": 1,
  "landscape": "dev",
  "kind": "applied",
  "revision": "` + recordRevision + `",
  "appliedAt": "2026-03-01T12:00:00Z",
  "readyAt": "2026-03-01T12:01:30Z",
  "operatorVersion": "v0.4.0"
}`
}

func TestDecodeRecordReadsARecord(t *testing.T) {
	g := NewWithT(t)
	record, err := DecodeRecord(recordSource, []byte(goodRecordFile()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(record).To(Equal(Record{
		Landscape:       "dev",
		Kind:            RecordApplied,
		Revision:        recordRevision,
		AppliedAt:       time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		ReadyAt:         time.Date(2026, 3, 1, 12, 1, 30, 0, time.UTC),
		OperatorVersion: "v0.4.0",
	}))
}

func TestEncodeRecordWritesWhatDecodeRecordReads(t *testing.T) {
	g := NewWithT(t)
	berlin := time.FixedZone("CET", 3600)
	for _, record := range []Record{
		{Landscape: "prod-eu1", Kind: RecordApplied, Revision: recordRevision, AppliedAt: time.Date(2026, 3, 1, 13, 0, 0, 0, berlin),
			ReadyAt: time.Date(2026, 3, 1, 13, 0, 5, 123, berlin), OperatorVersion: "v1.2.3-4-gabcdef0"},
		{Landscape: "dev", Kind: RecordHotfix, Revision: recordRevision, AppliedAt: decisionTime, ReadyAt: decisionTime, OperatorVersion: "dev"},
		{Landscape: "dev", Kind: RecordRefused, Revision: recordRevision, AppliedAt: decisionTime, OperatorVersion: "dev", Reason: "PolicyViolation"},
		{Landscape: "prod", Kind: RecordHeld, Revision: recordRevision, AppliedAt: decisionTime, OperatorVersion: "dev"},
		{Landscape: "prod", Kind: RecordReleased, Revision: recordRevision, AppliedAt: decisionTime, OperatorVersion: "dev"},
	} {
		data, err := EncodeRecord(record)
		g.Expect(err).NotTo(HaveOccurred())
		back, err := DecodeRecord(recordSource, data)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(back.AppliedAt.Location()).To(Equal(time.UTC), "times are written in UTC")
		g.Expect(back.AppliedAt.Equal(record.AppliedAt)).To(BeTrue())
		g.Expect(back.ReadyAt.Equal(record.ReadyAt)).To(BeTrue())
		back.AppliedAt, back.ReadyAt, record.AppliedAt, record.ReadyAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		g.Expect(back).To(Equal(record))
	}
}

func TestEncodeRecordRefusesAnInvalidRecord(t *testing.T) {
	g := NewWithT(t)
	_, err := EncodeRecord(Record{Landscape: "Dev", Kind: RecordApplied, Revision: "abc", AppliedAt: decisionTime, OperatorVersion: "v1"})
	g.Expect(err).To(MatchError(And(
		ContainSubstring(`landscape: landscape name "Dev"`),
		ContainSubstring(`revision: Invalid value "abc"`),
		ContainSubstring("readyAt: Required value"))))
}

func TestDecodeRecordRefusesAGarbledRecordNamingTheRecordAndField(t *testing.T) {
	good := goodRecordFile()
	for _, tc := range []struct {
		name, data, problem string
	}{
		{"not JSON", "landscape: dev", "not a record"},
		{"not an object", `["dev"]`, "not a record"},
		{"an unknown field", strings.Replace(good, `"kind"`, `"hold": true, "kind"`, 1), `unknown field "hold"`},
		{"a duplicate field", strings.Replace(good, `"kind"`, `"landscape": "prod", "kind"`, 1), `duplicate field "landscape"`},
		{"another version", strings.Replace(good, `"version": 1`, `"version": 2`, 1), "version: unsupported value 2: this operator reads version 1"},
		{"no version", strings.Replace(good, `"version": 1,`, ``, 1), "version: unsupported value 0"},
		{"a landscape that is no DNS label", strings.Replace(good, `"dev"`, `"../heads/main"`, 1), `landscape: landscape name "../heads/main"`},
		{"a short revision", strings.Replace(good, recordRevision, "89abcdef", 1), `revision: Invalid value "89abcdef"`},
		{"an uppercase revision", strings.Replace(good, recordRevision, strings.ToUpper(recordRevision), 1), "revision: Invalid value"},
		{"ready before applied", strings.Replace(good, "12:01:30Z", "11:59:59Z", 1), "readyAt: Invalid value 2026-03-01T11:59:59Z: before appliedAt 2026-03-01T12:00:00Z"},
		{"applied without ready", strings.Replace(good, `"readyAt": "2026-03-01T12:01:30Z",`, ``, 1), "readyAt: Required value"},
		{"a zero ready time", strings.Replace(good, "2026-03-01T12:01:30Z", "0001-01-01T00:00:00Z", 1), "readyAt: Invalid value: must be a time after year 1"},
		{"a time past year 9999 in UTC", strings.Replace(good, "2026-03-01T12:01:30Z", "9999-12-31T23:59:59-14:00", 1), "readyAt: Invalid value: year 10000 in UTC"},
		{"no applied time", strings.Replace(good, `"appliedAt": "2026-03-01T12:00:00Z",`, ``, 1), "appliedAt: Required value"},
		{"a time that is no time", strings.Replace(good, "2026-03-01T12:00:00Z", "yesterday", 1), "not a record"},
		{"an unknown kind", strings.Replace(good, `"applied"`, `"promoted"`, 1), `kind: Unsupported value "promoted"`},
		{"a refusal that became Ready", strings.Replace(good, `"applied"`, `"refused", "reason": "BuildFailed"`, 1), "readyAt: Forbidden"},
		{"a refusal without reason", strings.Replace(strings.Replace(good, `"applied"`, `"refused"`, 1), `"readyAt": "2026-03-01T12:01:30Z",`, ``, 1),
			`reason: Invalid value ""`},
		{"a reason on an applied record", strings.Replace(good, `"applied"`, `"applied", "reason": "BuildFailed"`, 1), "reason: Forbidden"},
		{"a hold that became Ready", strings.Replace(good, `"applied"`, `"held"`, 1), "readyAt: Forbidden: a held record changes what the landscape takes, not what it runs"},
		{"a release with a reason", strings.Replace(strings.Replace(good, `"applied"`, `"released", "reason": "BuildFailed"`, 1), `"readyAt": "2026-03-01T12:01:30Z",`, ``, 1),
			"reason: Forbidden"},
		{"an operator version with spaces", strings.Replace(good, `"v0.4.0"`, `"v0.4.0 (patched)"`, 1), "operatorVersion: Invalid value"},
		{"a file over the limit", good + strings.Repeat(" ", MaxRecordSize), "more than the 4096 bytes a record may have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := DecodeRecord(recordSource, []byte(tc.data))
			var recordErr *RecordError
			g.Expect(errors.As(err, &recordErr)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(HavePrefix(recordSource + ": "))
			g.Expect(err.Error()).To(ContainSubstring(tc.problem))
		})
	}
}

func TestAGarbledValueIsQuotedShortInTheError(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("é", 200)
	_, err := DecodeRecord(recordSource, []byte(strings.Replace(goodRecordFile(), `"v0.4.0"`, `"`+long+`"`, 1)))
	g.Expect(err).To(MatchError(ContainSubstring(`"` + strings.Repeat("é", 32) + `…"`)))
}

func TestLandscapeRefAcceptsOnlyALandscapeName(t *testing.T) {
	g := NewWithT(t)
	ref, err := LandscapeRef("prod-eu1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ref).To(Equal("refs/profilesync/landscapes/prod-eu1"))
	for _, name := range []string{
		"", "Prod", "-dev", "dev-", "dev/eu", "../heads/main", "..", "dev:refs/heads/main", "+dev", "dev*", "dev.lock", "dev eu", "dev\n",
		strings.Repeat("a", 64),
	} {
		_, err := LandscapeRef(name)
		g.Expect(err).To(MatchError(ContainSubstring("landscape name")), "name %q", name)
	}
}
