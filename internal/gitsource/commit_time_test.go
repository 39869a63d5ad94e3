package gitsource

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/profilesync/profilesync/internal/rollout"
)

func TestCommitTimeIsTheCommittersTime(t *testing.T) {
	r := newExportRepo(t)
	r.commit(map[string]string{"a.yaml": "a: 1\n"})
	// rawCommit signs the author one minute before the committer, as a
	// rebase does: the commit lands at the committer's time.
	commit := r.rawCommit([]object.TreeEntry{{Name: "a.yaml", Mode: 0o100644, Hash: r.rawBlob("a: 2\n")}})
	got, err := CommitTime(r.dir, commit, ObjectLimitsFor(0))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 1, 1, 0, 3, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("CommitTime = %s, want the committer's %s", got, want)
	}
	if _, err := CommitTime(r.dir, "0123456789012345678901234567890123456789", ObjectLimitsFor(0)); err == nil {
		t.Fatal("a commit the repository lacks has no time")
	}
	if _, err := CommitTime(t.TempDir(), commit, ObjectLimitsFor(0)); err == nil {
		t.Fatal("a directory that is no repository has no commits")
	}
}

// rawCommitObject is a commit's bytes as Git stores them, for a time
// go-git will not encode (it writes a negative one as 0).
type rawCommitObject string

func (c rawCommitObject) Encode(o plumbing.EncodedObject) error {
	o.SetType(plumbing.CommitObject)
	w, err := o.Writer()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(c)); err != nil {
		return err
	}
	return w.Close()
}

// TestCommitTimeRefusesATimeNoStatusCanHold writes commits whose committer
// claims year 10000 (go-git encodes the signature as unix seconds, as Git
// does), a time far past it, and one before year 0 (written raw): each is
// refused with
// rollout.ErrTimeOutOfRange, naming the commit and the field, never
// returned for a status or a JSON report to fail on.
func TestCommitTimeRefusesATimeNoStatusCanHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		when time.Time
	}{
		{"a committer time in year 10000 is refused", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"a committer time far past year 9999 is refused", time.Unix(1<<62, 0)},
		{"a committer time before year 0 is refused", time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newExportRepo(t)
			r.commit(map[string]string{"a.yaml": "a: 1\n"})
			tree := r.store(&object.Tree{Entries: []object.TreeEntry{{Name: "a.yaml", Mode: 0o100644, Hash: r.rawBlob("a: 2\n")}}})
			var commit string
			if tc.when.Unix() < 0 {
				line := fmt.Sprintf("hostile <hostile@example.com> %d +0000", tc.when.Unix())
				commit = r.store(rawCommitObject("tree " + tree.String() + "\nauthor " + line + "\ncommitter " + line + "\n\nfrom the past\n")).String()
			} else {
				signature := object.Signature{Name: "hostile", Email: "hostile@example.com", When: tc.when}
				commit = r.store(&object.Commit{Author: signature, Committer: signature, Message: "from the future", TreeHash: tree}).String()
			}
			_, err := CommitTime(r.dir, commit, ObjectLimitsFor(0))
			if !errors.Is(err, rollout.ErrTimeOutOfRange) {
				t.Fatalf("CommitTime = %v, want rollout.ErrTimeOutOfRange", err)
			}
			for _, want := range []string{"commit " + commit, "committer time", "outside years 0000 to 9999"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
