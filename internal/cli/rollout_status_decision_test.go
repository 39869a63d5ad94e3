package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/rollout"
)

// TestRolloutStatusIgnoresARecordWhoseSoakEndsPastYear9999: dev rolls back
// to the first commit, then records the second again as Ready in the last
// hour of year 9999, so prod's soak of a day would end in year 10000, which
// no report can write. The record is ignored with a warning, the status is
// written (exit 0), and dev is seen running the first commit.
func TestRolloutStatusIgnoresARecordWhoseSoakEndsPastYear9999(t *testing.T) {
	g := NewWithT(t)
	repo := newStatusRepo(t)
	repo.record(t, rollout.Record{Landscape: "dev", Kind: rollout.RecordApplied, Revision: repo.first,
		AppliedAt: time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC), ReadyAt: time.Date(2026, 11, 21, 9, 31, 0, 0, time.UTC), OperatorVersion: "v0.1.0"})
	repo.record(t, rollout.Record{Landscape: "dev", Kind: rollout.RecordApplied, Revision: repo.second,
		AppliedAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), ReadyAt: time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC), OperatorVersion: "v0.1.0"})

	status, stdout, stderr := statusOutput(t, repo.dir, "--at", statusAt, "--output", "json")
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stderr).To(ContainSubstring("warning: prod: record of upstream dev left out: a time out of range: record "))
	g.Expect(stderr).To(ContainSubstring("readyAt: 9999-12-31T23:00:00Z plus the soak of 24h0m0s is after 9999-12-31T23:59:59Z"))
	var report rolloutStatus
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	prod := report.Landscapes[1]
	g.Expect(prod.Waiting.Revision).To(Equal(repo.second))
	g.Expect(prod.Waiting.EligibleAt).To(BeNil(), "dev rolled back to the first commit")
	g.Expect(prod.Waiting.Holds).To(Equal([]holdStatus{{Landscape: "dev", Running: repo.first}}))
}

// TestRolloutStatusNamesAnUpstreamWithoutRecords: dev has written no
// records, so prod waits for ever; the status says which upstream and which
// field to set.
func TestRolloutStatusNamesAnUpstreamWithoutRecords(t *testing.T) {
	g := NewWithT(t)
	repo := newStatusRepo(t)
	g.Expect(repo.repo.Storer.RemoveReference(plumbing.ReferenceName(rollout.LandscapeRefPrefix + "dev"))).To(Succeed())

	status, stdout, stderr := statusOutput(t, repo.dir, "--at", statusAt, "--output", "json")
	g.Expect(status).To(Equal(exitOK), stderr)
	note := "dev has recorded no applied revision under refs/profilesync/landscapes/dev: the ProfileSync of landscape dev must record it (spec.rollout.record"
	g.Expect(stderr).To(ContainSubstring("warning: prod: " + note))
	var report rolloutStatus
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	prod := report.Landscapes[1]
	g.Expect(prod.Warnings).To(ContainElement(ContainSubstring(note)))
	g.Expect(prod.Waiting.Revision).To(Equal(repo.second))
	g.Expect(prod.Waiting.EligibleAt).To(BeNil())
}

// TestRolloutStatusShowsAHoldFromTheRecords: prod recorded a hold
// (spec.rollout.hold) while it ran the first commit, so once dev has held
// the second for the soak, prod takes nothing and holds the second back,
// in every output; the release it records next lets it take the second.
func TestRolloutStatusShowsAHoldFromTheRecords(t *testing.T) {
	g := NewWithT(t)
	repo := newStatusRepo(t)
	heldAt := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	repo.record(t, rollout.Record{Landscape: "prod", Kind: rollout.RecordHeld, Revision: repo.first, AppliedAt: heldAt, OperatorVersion: "v0.1.0"})
	const afterTheSoak = "2026-11-22T09:05:00Z"
	eligibleAt := time.Date(2026, 11, 22, 9, 5, 0, 0, time.UTC)

	status, stdout, stderr := statusOutput(t, repo.dir, "--at", afterTheSoak, "--output", "json")
	g.Expect(status).To(Equal(exitOK), stderr)
	var report rolloutStatus
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	prod := report.Landscapes[1]
	g.Expect(prod.Takes).To(BeNil(), "held")
	g.Expect(prod.Held).NotTo(BeNil())
	g.Expect(*prod.Held).To(Equal(heldRevision{Revision: repo.first, Since: heldAt, Record: prod.Held.Record}))
	g.Expect(prod.Waiting.Revision).To(Equal(repo.second), "the commit the hold holds back")
	g.Expect(*prod.Waiting.EligibleAt).To(Equal(eligibleAt))

	status, stdout, stderr = statusOutput(t, repo.dir, "--at", afterTheSoak)
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stdout).To(MatchRegexp(`prod\s+dev\s+1d\s+%s\s+2026-11-20T13:00:00Z\s+held; %s held back\n`, shortCommit(repo.first), shortCommit(repo.second)))
	g.Expect(stdout).To(ContainSubstring("prod is held at %s since 2026-11-21T10:00:00Z (spec.rollout.hold): it takes nothing until the hold is released.", shortCommit(repo.first)))
	g.Expect(stdout).To(ContainSubstring("prod holds back %s: dev has held it since 2026-11-21T09:05:00Z, soak 1d.", shortCommit(repo.second)))

	repo.record(t, rollout.Record{Landscape: "prod", Kind: rollout.RecordReleased, Revision: repo.first, AppliedAt: heldAt.Add(time.Hour), OperatorVersion: "v0.1.0"})
	status, stdout, stderr = statusOutput(t, repo.dir, "--at", afterTheSoak, "--output", "json")
	g.Expect(status).To(Equal(exitOK), stderr)
	report = rolloutStatus{}
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	prod = report.Landscapes[1]
	g.Expect(prod.Held).To(BeNil(), "released")
	g.Expect(prod.Takes.Revision).To(Equal(repo.second))
}
