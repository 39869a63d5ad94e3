package profilesync_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"

	"github.com/profilesync/profilesync/controllers/profilesync"
	"github.com/profilesync/profilesync/internal/cli"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/rollout"
)

// agreementRollout: prod waits an hour after dev.
const agreementRollout = `apiVersion: rollout.profilesync.io/v1alpha1
kind: Rollout
landscapes:
- name: dev
  path: dev
- name: prod
  path: prod
  after: [dev]
  soak: 1h
`

var agreementNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// landscapeHistory is a repository of the table: commits of main and of
// side branches, each named, with its parents by name (the first parent
// first); and the records of dev and prod, newest first.
type landscapeHistory struct {
	commits []agreementCommit
	dev     []agreementRecord
	prod    []agreementRecord
	// signed: dev signs its records (but the forged ones), and prod
	// counts only those its key verifies (spec.rollout.upstreamKeys,
	// `rollout status --upstream-keys`).
	signed bool
}

type agreementCommit struct {
	name    string
	parents []string
}

// agreementRecord is a record of commit, Ready (or refused) before
// agreementNow by ago.
type agreementRecord struct {
	kind   rollout.RecordKind
	commit string
	ago    time.Duration
	// forged is written unsigned by someone who can push, where the
	// landscape's own records are signed (landscapeHistory.signed).
	forged bool
}

func applied(commit string, ago time.Duration) agreementRecord {
	return agreementRecord{rollout.RecordApplied, commit, ago, false}
}

func hotfix(commit string, ago time.Duration) agreementRecord {
	return agreementRecord{rollout.RecordHotfix, commit, ago, false}
}

func refused(commit string, ago time.Duration) agreementRecord {
	return agreementRecord{rollout.RecordRefused, commit, ago, false}
}

// held and released are the records of spec.rollout.hold set and cleared
// while the landscape ran commit.
func held(commit string, ago time.Duration) agreementRecord {
	return agreementRecord{rollout.RecordHeld, commit, ago, false}
}

func released(commit string, ago time.Duration) agreementRecord {
	return agreementRecord{rollout.RecordReleased, commit, ago, false}
}

// forgedApplied is an applied record of commit, Ready ago, that dev's
// operator did not write: unsigned.
func forgedApplied(commit string, ago time.Duration) agreementRecord {
	return agreementRecord{rollout.RecordApplied, commit, ago, true}
}

// linear is main: c1 ← c2 ← c3 ← c4.
var linear = []agreementCommit{{"c1", nil}, {"c2", []string{"c1"}}, {"c3", []string{"c2"}}, {"c4", []string{"c3"}}}

// TestTheOperatorAndRolloutStatusTakeTheSameCommit holds the operator's
// decision of prod's sync (decideCandidates and follow) against `rollout
// status --output json` on the same repository, for landscape histories
// with second-parent merges, refusals, rollbacks, hotfixes, holds and an
// upstream without records: both say prod takes the same commit (none
// under a hold) and waits for the same one (under a hold, the one it holds
// back), eligible at the same time. The operator knows the hold from its
// spec (hold), `rollout status` from prod's records, which the operator
// writes as it holds and releases.
func TestTheOperatorAndRolloutStatusTakeTheSameCommit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history landscapeHistory
		// hold is prod's spec.rollout.hold, as its records say it;
		// hotfix names the commit of its spec.rollout.hotfix.
		hold   bool
		hotfix string
		// takes and waits name the commits expected; eligibleIn is when
		// the one waited for becomes eligible after agreementNow,
		// negative when it did before (0: never without a new record).
		takes, waits string
		eligibleIn   time.Duration
		// note is a text the Waiting condition and the status's warnings
		// of prod both hold; message one its Waiting condition holds.
		note, message string
	}{
		{
			name:    "prod takes the newest commit dev has held for the soak",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{applied("c4", 2*time.Hour), applied("c1", 5*time.Hour)}, prod: []agreementRecord{applied("c1", 4*time.Hour)}},
			takes:   "c4",
		},
		{
			name:    "prod takes what dev held for the soak and waits for the newer commit dev holds since ten minutes",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{applied("c4", 10*time.Minute), applied("c2", 2*time.Hour)}, prod: []agreementRecord{applied("c1", 4*time.Hour)}},
			takes:   "c2", waits: "c4", eligibleIn: 50 * time.Minute,
		},
		{
			name: "prod runs a side commit merged as a second parent, and never moves back to the commit it contains",
			history: landscapeHistory{
				commits: []agreementCommit{{"c1", nil}, {"side", []string{"c1"}}, {"c2", []string{"c1"}}, {"merge", []string{"c2", "side"}}, {"c4", []string{"merge"}}},
				dev:     []agreementRecord{applied("c1", 5*time.Hour)},
				prod:    []agreementRecord{hotfix("side", 4*time.Hour)},
			},
			waits: "c4",
		},
		{
			name:    "a commit dev refused is not taken, and prod takes the older one dev holds",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{refused("c4", 30*time.Minute), applied("c3", 2*time.Hour), applied("c1", 5*time.Hour)}, prod: []agreementRecord{applied("c1", 4*time.Hour)}},
			takes:   "c3", waits: "c4",
		},
		{
			name:    "dev rolled back to c2: c3 waits, c2 has been held since dev took c3",
			history: landscapeHistory{commits: linear[:3], dev: []agreementRecord{applied("c2", 30*time.Minute), applied("c3", 2*time.Hour), applied("c1", 5*time.Hour)}, prod: []agreementRecord{applied("c1", 4*time.Hour)}},
			takes:   "c2", waits: "c3",
		},
		{
			name:    "a hotfix dev took counts as held",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{hotfix("c3", 2*time.Hour), applied("c1", 5*time.Hour)}, prod: []agreementRecord{applied("c1", 4*time.Hour)}},
			takes:   "c3", waits: "c4",
		},
		{
			name:    "prod does not take again the revision it refused",
			history: landscapeHistory{commits: linear[:3], dev: []agreementRecord{applied("c3", 2*time.Hour)}, prod: []agreementRecord{refused("c3", time.Hour), applied("c2", 3*time.Hour)}},
		},
		{
			name:    "a hold keeps prod where it is in both, holding back the commit it would take, eligible since dev's soak of it ended",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{applied("c3", 2*time.Hour)}, prod: []agreementRecord{held("c1", 30*time.Minute), applied("c1", 4*time.Hour)}},
			hold:    true, waits: "c3", eligibleIn: -time.Hour, message: "spec.rollout.hold keeps landscape prod at",
		},
		{
			name: "a hold with nothing that qualifies holds back the commit prod waits for",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{applied("c4", 10*time.Minute), applied("c1", 5*time.Hour)},
				prod: []agreementRecord{held("c1", 30*time.Minute), applied("c1", 4*time.Hour)}},
			hold: true, waits: "c4", eligibleIn: 50 * time.Minute,
		},
		{
			name: "a released hold lets prod take again what dev held for the soak",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{applied("c3", 2*time.Hour)},
				prod: []agreementRecord{released("c1", 10*time.Minute), held("c1", 30*time.Minute), applied("c1", 4*time.Hour)}},
			takes: "c3", waits: "c4",
		},
		{
			name: "a hold recorded before prod's newest applied record is over",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{applied("c3", 2*time.Hour)},
				prod: []agreementRecord{applied("c2", 3*time.Hour), held("c1", 4*time.Hour), applied("c1", 5*time.Hour)}},
			takes: "c3", waits: "c4",
		},
		{
			name:    "dev's own hold neither starts nor interrupts what it holds for prod",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{held("c3", 30*time.Minute), applied("c3", 2*time.Hour)}, prod: []agreementRecord{applied("c1", 4*time.Hour)}},
			takes:   "c3", waits: "c4",
		},
		{
			name:    "prod runs the hotfix it recorded, and takes what dev held for the soak after it",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{applied("c3", 2*time.Hour)}, prod: []agreementRecord{hotfix("c2", 3*time.Hour), applied("c1", 4*time.Hour)}},
			takes:   "c3", waits: "c4",
		},
		{
			name: "a hotfix prod recorded ahead of dev is no candidate again, and the commits after it wait for dev",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{applied("c1", 5*time.Hour)},
				prod: []agreementRecord{hotfix("c3", time.Hour), applied("c1", 4*time.Hour)}},
			waits: "c4",
		},
		{
			name: "a hotfix prod refused is not taken again: prod goes on with the rollout in both",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{applied("c2", 2*time.Hour)},
				prod: []agreementRecord{refused("c3", 30*time.Minute), applied("c1", 4*time.Hour)}},
			hotfix: "c3", takes: "c2", waits: "c4",
		},
		{
			name: "without upstream keys a forged record of dev counts in both: prod takes the commit at once",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{forgedApplied("c4", 30*24*time.Hour), applied("c2", 2*time.Hour)},
				prod: []agreementRecord{applied("c1", 4*time.Hour)}},
			takes: "c4",
		},
		{
			name: "with upstream keys the forged record is ignored in both: prod takes what dev signed it held, and c4 waits",
			history: landscapeHistory{commits: linear, dev: []agreementRecord{forgedApplied("c4", 30*24*time.Hour), applied("c2", 2*time.Hour)},
				prod: []agreementRecord{applied("c1", 4*time.Hour)}, signed: true},
			takes: "c2", waits: "c4", message: "ignored 1 records of landscape dev whose signature does not verify",
		},
		{
			name:    "dev records nothing: prod waits for the tip and both name dev and spec.rollout.record",
			history: landscapeHistory{commits: linear, prod: []agreementRecord{applied("c1", 4*time.Hour)}},
			waits:   "c4", note: rollout.NoRecordsNote("dev"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dir, hashes, keysFile := writeLandscapeHistory(t, tc.history)
			running := ""
			for _, r := range tc.history.prod {
				if r.kind.Runs() {
					running = hashes[r.commit]
					break
				}
			}
			names := map[string]string{"": ""}
			for name, hash := range hashes {
				names[hash] = name
			}

			// rollout status, as a user runs it.
			var stdout, stderr bytes.Buffer
			args := []string{"rollout", "status", dir, "--branch", "main", "--at", agreementNow.Format(time.RFC3339), "--output", "json"}
			var upstreamKeys *gitsource.RecordKeys
			if keysFile != "" {
				args = append(args, "--upstream-keys", keysFile)
				data, err := os.ReadFile(keysFile)
				g.Expect(err).NotTo(HaveOccurred())
				keys, err := gitsource.ParseRecordKeys(keysFile, data)
				g.Expect(err).NotTo(HaveOccurred())
				upstreamKeys = &keys
			}
			status := cli.Execute(args, nil, &stdout, &stderr)
			g.Expect(status).To(Equal(0), stderr.String())
			var report struct {
				Landscapes []struct {
					Name  string
					Takes *struct {
						Revision string
					}
					Waiting *struct {
						Revision   string
						EligibleAt *time.Time
					}
					Held *struct {
						Revision string
					}
					Warnings []string
				}
			}
			g.Expect(json.Unmarshal(stdout.Bytes(), &report)).To(Succeed())
			prod := report.Landscapes[1]
			g.Expect(prod.Name).To(Equal("prod"))
			statusTakes, statusWaits := "", ""
			var statusEligible *time.Time
			if prod.Takes != nil {
				statusTakes = names[prod.Takes.Revision]
			}
			if prod.Waiting != nil {
				statusWaits, statusEligible = names[prod.Waiting.Revision], prod.Waiting.EligibleAt
			}

			// The operator's sync of prod.
			landscapes, err := gitsource.OpenLandscapes(dir, gitsource.ObjectLimitsFor(0))
			g.Expect(err).NotTo(HaveOccurred())
			defer landscapes.Close()
			prodLandscape := rollout.Landscape{Name: "prod", Path: "prod", After: []string{"dev"}, Soak: time.Hour}
			target, rolloutStatus, message, err := profilesync.OperatorRolloutDecision(landscapes, prodLandscape, "main", running, tc.hold, hashes[tc.hotfix], agreementNow, upstreamKeys)
			g.Expect(err).NotTo(HaveOccurred())
			operatorTakes, operatorWaits := "", ""
			var operatorEligible *time.Time
			if target != running {
				operatorTakes = names[target]
			}
			if w := rolloutStatus.Waiting; w != nil {
				operatorWaits = names[w.Revision]
				if w.EligibleAt != nil {
					operatorEligible = &w.EligibleAt.Time
				}
			}

			g.Expect(statusTakes).To(Equal(tc.takes), "rollout status takes")
			var eligible *time.Time
			if tc.eligibleIn != 0 {
				at := agreementNow.Add(tc.eligibleIn)
				eligible = &at
			}
			g.Expect(prod.Held != nil).To(Equal(tc.hold), "rollout status reads the hold from prod's records")
			if tc.hold {
				g.Expect(names[prod.Held.Revision]).To(Equal(names[running]), "held at what it runs")
			}
			g.Expect(operatorTakes).To(Equal(tc.takes), "the operator takes")
			g.Expect(statusWaits).To(Equal(tc.waits), "rollout status waits for")
			g.Expect(operatorWaits).To(Equal(tc.waits), "the operator waits for")
			g.Expect(timeOrNil(statusEligible)).To(Equal(timeOrNil(eligible)), "rollout status's eligibility")
			g.Expect(timeOrNil(operatorEligible)).To(Equal(timeOrNil(eligible)), "the operator's eligibility")
			if tc.note != "" {
				g.Expect(message).To(ContainSubstring(tc.note))
				g.Expect(prod.Warnings).To(ContainElement(tc.note))
			}
			g.Expect(message).To(ContainSubstring(tc.message))
		})
	}
}

func timeOrNil(t *time.Time) string {
	if t == nil {
		return "never without a new record"
	}
	return t.UTC().Format(time.RFC3339)
}

// writeLandscapeHistory writes h into a new repository, main at its last
// commit, every commit holding the rollout file, and returns its directory,
// the hash of each commit by name and, when h is signed, the
// allowed_signers file of dev's key.
func writeLandscapeHistory(t *testing.T, h landscapeHistory) (string, map[string]string, string) {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	var devKey ssh.Signer
	keysFile := ""
	if h.signed {
		_, private, err := ed25519.GenerateKey(rand.Reader)
		g.Expect(err).NotTo(HaveOccurred())
		devKey, err = ssh.NewSignerFromKey(private)
		g.Expect(err).NotTo(HaveOccurred())
		keysFile = filepath.Join(t.TempDir(), "allowed_signers")
		g.Expect(os.WriteFile(keysFile, append([]byte("dev "), ssh.MarshalAuthorizedKey(devKey.PublicKey())...), 0o600)).To(Succeed())
	}
	repository, err := git.PlainInit(dir, false)
	g.Expect(err).NotTo(HaveOccurred())
	hashes := map[string]string{}
	when := agreementNow.Add(-24 * time.Hour)
	for _, c := range h.commits {
		when = when.Add(time.Minute)
		var parents []plumbing.Hash
		for _, p := range c.parents {
			parents = append(parents, plumbing.NewHash(hashes[p]))
		}
		files := map[string]string{rollout.FileName: agreementRollout, "commit.txt": c.name}
		hashes[c.name] = writeAgreementCommit(t, repository, files, parents, when, nil).String()
	}
	g.Expect(repository.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", plumbing.NewHash(hashes[h.commits[len(h.commits)-1].name])))).To(Succeed())
	for landscape, records := range map[string][]agreementRecord{"dev": h.dev, "prod": h.prod} {
		var tip plumbing.Hash
		for i := len(records) - 1; i >= 0; i-- {
			r := records[i]
			record := rollout.Record{Landscape: landscape, Kind: r.kind, Revision: hashes[r.commit], AppliedAt: agreementNow.Add(-r.ago - time.Minute), OperatorVersion: "v0.1.0"}
			switch {
			case r.kind == rollout.RecordRefused:
				record.Reason = "ValidationFailed"
			case r.kind.Runs():
				record.ReadyAt = agreementNow.Add(-r.ago)
			default: // held or released: set or cleared ago
				record.AppliedAt = agreementNow.Add(-r.ago)
			}
			content, err := rollout.EncodeRecord(record)
			g.Expect(err).NotTo(HaveOccurred())
			var parents []plumbing.Hash
			if !tip.IsZero() {
				parents = []plumbing.Hash{tip}
			}
			var signer ssh.Signer
			if landscape == "dev" && !r.forged {
				signer = devKey
			}
			tip = writeAgreementCommit(t, repository, map[string]string{rollout.RecordFileName: string(content)}, parents, record.AppliedAt, signer)
		}
		if !tip.IsZero() {
			g.Expect(repository.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(rollout.LandscapeRefPrefix+landscape), tip))).To(Succeed())
		}
	}
	return dir, hashes, keysFile
}

// writeAgreementCommit writes a commit of files; signer, when not nil,
// signs it as git signs with gpg.format=ssh.
func writeAgreementCommit(t *testing.T, repository *git.Repository, files map[string]string, parents []plumbing.Hash, when time.Time, signer ssh.Signer) plumbing.Hash {
	t.Helper()
	g := NewWithT(t)
	storer := repository.Storer
	tree := &object.Tree{}
	for _, name := range []string{"commit.txt", rollout.FileName, rollout.RecordFileName} {
		content, ok := files[name]
		if !ok {
			continue
		}
		blob := storer.NewEncodedObject()
		blob.SetType(plumbing.BlobObject)
		writer, err := blob.Writer()
		g.Expect(err).NotTo(HaveOccurred())
		_, err = writer.Write([]byte(content))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(writer.Close()).To(Succeed())
		hash, err := storer.SetEncodedObject(blob)
		g.Expect(err).NotTo(HaveOccurred())
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: hash})
	}
	treeObject := storer.NewEncodedObject()
	g.Expect(tree.Encode(treeObject)).To(Succeed())
	treeHash, err := storer.SetEncodedObject(treeObject)
	g.Expect(err).NotTo(HaveOccurred())
	signature := object.Signature{Name: "test", Email: "test@example.invalid", When: when}
	commit := &object.Commit{Author: signature, Committer: signature, Message: fmt.Sprintf("commit of %s", strings.Join(keys(files), ", ")), TreeHash: treeHash, ParentHashes: parents}
	if signer != nil {
		payload := &plumbing.MemoryObject{}
		g.Expect(commit.EncodeWithoutSignature(payload)).To(Succeed())
		reader, err := payload.Reader()
		g.Expect(err).NotTo(HaveOccurred())
		sshSignature, err := sshsig.Sign(reader, signer, sshsig.HashSHA512, gitsource.SSHSignatureNamespace)
		g.Expect(err).NotTo(HaveOccurred())
		commit.PGPSignature = string(sshsig.Armor(sshSignature))
	}
	commitObject := storer.NewEncodedObject()
	g.Expect(commit.Encode(commitObject)).To(Succeed())
	hash, err := storer.SetEncodedObject(commitObject)
	g.Expect(err).NotTo(HaveOccurred())
	return hash
}

func keys(files map[string]string) []string {
	var out []string
	for _, name := range []string{"commit.txt", rollout.FileName, rollout.RecordFileName} {
		if _, ok := files[name]; ok {
			out = append(out, name)
		}
	}
	return out
}
