package gitsource

import (
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
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
