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
	note := "dev has recorded no applied revision under refs/profilesync/landscapes/dev: set spec.rollout.record on the ProfileSync of landscape dev"
	g.Expect(stderr).To(ContainSubstring("warning: prod: " + note))
	var report rolloutStatus
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	prod := report.Landscapes[1]
	g.Expect(prod.Warnings).To(ContainElement(ContainSubstring(note)))
	g.Expect(prod.Waiting.Revision).To(Equal(repo.second))
	g.Expect(prod.Waiting.EligibleAt).To(BeNil())
}
