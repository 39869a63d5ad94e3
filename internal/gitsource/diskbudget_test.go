package gitsource

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	. "github.com/onsi/gomega"
)

func TestDiskBudgetCountsWhatIsOnDisk(t *testing.T) {
	const limit = 1000
	tests := []struct {
		name      string
		unlimited bool
		// writes runs against a budgeted file system and returns the error
		// of the last operation.
		writes       func(g *WithT, fs billy.Filesystem) error
		wantExceeded bool
	}{
		{
			name: "files up to the limit together are written",
			writes: func(g *WithT, fs billy.Filesystem) error {
				g.Expect(writeFile(fs, "a", 600)).To(Succeed())
				return writeFile(fs, "dir/b", 400)
			},
		},
		{
			name: "a write that would cross the limit fails",
			writes: func(g *WithT, fs billy.Filesystem) error {
				g.Expect(writeFile(fs, "a", 600)).To(Succeed())
				return writeFile(fs, "b", 401)
			},
			wantExceeded: true,
		},
		{
			name: "a file rewritten counts with its new size only",
			writes: func(g *WithT, fs billy.Filesystem) error {
				g.Expect(writeFile(fs, "a", 900)).To(Succeed())
				g.Expect(writeFile(fs, "a", 900)).To(Succeed())
				return writeFile(fs, "b", 100)
			},
		},
		{
			name: "a file overwritten in place counts once",
			writes: func(g *WithT, fs billy.Filesystem) error {
				g.Expect(writeFile(fs, "a", 900)).To(Succeed())
				file, err := fs.OpenFile("a", os.O_RDWR, 0o644)
				g.Expect(err).NotTo(HaveOccurred())
				defer file.Close()
				_, err = file.Write(make([]byte, 900))
				return err
			},
		},
		{
			name: "appending grows the file",
			writes: func(g *WithT, fs billy.Filesystem) error {
				g.Expect(writeFile(fs, "a", 600)).To(Succeed())
				file, err := fs.OpenFile("a", os.O_WRONLY|os.O_APPEND, 0o644)
				g.Expect(err).NotTo(HaveOccurred())
				defer file.Close()
				_, err = file.Write(make([]byte, 401))
				return err
			},
			wantExceeded: true,
		},
		{
			name: "truncating past the limit fails",
			writes: func(g *WithT, fs billy.Filesystem) error {
				file, err := fs.Create("a")
				g.Expect(err).NotTo(HaveOccurred())
				defer file.Close()
				return file.Truncate(limit + 1)
			},
			wantExceeded: true,
		},
		{
			name: "a removed file no longer counts",
			writes: func(g *WithT, fs billy.Filesystem) error {
				g.Expect(writeFile(fs, "a", 900)).To(Succeed())
				g.Expect(fs.Remove("a")).To(Succeed())
				return writeFile(fs, "b", 900)
			},
		},
		{
			name: "a file renamed over another counts once",
			writes: func(g *WithT, fs billy.Filesystem) error {
				g.Expect(writeFile(fs, "a", 500)).To(Succeed())
				g.Expect(writeFile(fs, "b", 400)).To(Succeed())
				g.Expect(fs.Rename("a", "b")).To(Succeed())
				return writeFile(fs, "c", 500)
			},
		},
		{
			name: "a temporary file counts, and once renamed",
			writes: func(g *WithT, fs billy.Filesystem) error {
				file, err := fs.TempFile("", "tmp_")
				g.Expect(err).NotTo(HaveOccurred())
				_, err = file.Write(make([]byte, 600))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(file.Close()).To(Succeed())
				g.Expect(fs.Rename(file.Name(), "pack")).To(Succeed())
				return writeFile(fs, "b", 401)
			},
			wantExceeded: true,
		},
		{
			name: "a chroot shares the budget, like .git and the worktree",
			writes: func(g *WithT, fs billy.Filesystem) error {
				g.Expect(writeFile(fs, "a", 600)).To(Succeed())
				dotGit, err := fs.Chroot(".git")
				g.Expect(err).NotTo(HaveOccurred())
				return writeFile(dotGit, "objects/pack/p", 401)
			},
			wantExceeded: true,
		},
		{
			name: "a symlink counts its target",
			writes: func(g *WithT, fs billy.Filesystem) error {
				g.Expect(writeFile(fs, "a", 995)).To(Succeed())
				return fs.Symlink("a/long/target", "link")
			},
			wantExceeded: true,
		},
		{
			name:      "zero means no limit",
			unlimited: true,
			writes: func(g *WithT, fs billy.Filesystem) error {
				return writeFile(fs, "a", 100*limit)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			budget := newDiskBudget(limit)
			if tt.unlimited {
				budget = newDiskBudget(0)
			}

			err := tt.writes(g, budget.filesystem(osfs.New(dir)))

			g.Expect(budget.exceeded()).To(Equal(tt.wantExceeded))
			if tt.wantExceeded {
				g.Expect(err).To(MatchError(errOverBudget))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			if !tt.unlimited {
				g.Expect(diskUsage(g, dir)).To(BeNumerically("<=", limit), "a refused write never reaches the disk")
			}
		})
	}
}

// writeFile creates name with size zero bytes.
func writeFile(fs billy.Filesystem, name string, size int) error {
	file, err := fs.Create(name)
	if err != nil {
		return err
	}
	_, err = file.Write(make([]byte, size))
	if closeErr := file.Close(); err == nil {
		err = closeErr
	}
	return err
}

// diskUsage is the size of the files under dir, symlink targets included.
func diskUsage(g *WithT, dir string) int64 {
	var total int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			total += info.Size()
		}
		return err
	})
	g.Expect(err).NotTo(HaveOccurred())
	return total
}
