package repofile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
)

// hostileRepository lays out a repository next to a secret outside it:
// every way a file of the repository can lead elsewhere.
func hostileRepository(t *testing.T) (root, outside string) {
	t.Helper()
	parent := t.TempDir()
	root, outside = filepath.Join(parent, "repo"), filepath.Join(parent, "secret")
	files := map[string]string{
		"repo/base/profile.yaml":       "kind: CloudProfile\n",
		"repo/base/nested/other.yml":   "kind: CloudProfile\n",
		"repo/.git/secret.yaml":        "token: CANARY\n",
		"repo/sub/.git/config":         "token: CANARY\n",
		"repo/big.yaml":                strings.Repeat("x", 101) + "\n",
		"repo/exact.yaml":              strings.Repeat("x", 99) + "\n",
		"repo/laughs.yaml":             "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n",
		"secret/creds.yaml":            "token: CANARY\n",
		"repo/docs/README.md":          "not YAML\n",
		"repo/base/inside-target.yaml": "kind: CloudProfile\n",
	}
	for name, content := range files {
		path := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"repo/links/out.yaml":    "../../secret/creds.yaml",
		"repo/links/abs.yaml":    filepath.Join(outside, "creds.yaml"),
		"repo/links/zero.yaml":   "/dev/zero",
		"repo/links/git.yaml":    "../.git/secret.yaml",
		"repo/links/inside.yaml": "../base/inside-target.yaml",
		"repo/links/dangling":    "../nowhere.yaml",
		"repo/links/outdir":      "../../secret",
	}
	if err := os.MkdirAll(filepath.Join(root, "links"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(parent, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "base", "pipe.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

func TestReadFileRules(t *testing.T) {
	root, _ := hostileRepository(t)
	tests := []struct {
		name string
		file string
		// want is the content read; wantErr, when set, a part of the error.
		want, wantErr string
		wantIs        error
	}{
		{name: "a regular file inside the root is read", file: "base/profile.yaml", want: "kind: CloudProfile\n"},
		{name: "a link to a file inside the root is resolved and read", file: "links/inside.yaml", want: "kind: CloudProfile\n"},
		{name: "a file of exactly the maximum file size is read", file: "exact.yaml", want: strings.Repeat("x", 99) + "\n"},
		{name: "a relative link out of the root is refused", file: "links/out.yaml", wantErr: "links/out.yaml: a symbolic link that leads outside the repository root: refused", wantIs: ErrRefused},
		{name: "an absolute link out of the root is refused", file: "links/abs.yaml", wantErr: "links/abs.yaml: a symbolic link that leads outside the repository root", wantIs: ErrRefused},
		{name: "a link to a device is refused", file: "links/zero.yaml", wantErr: "links/zero.yaml: a symbolic link that leads outside", wantIs: ErrRefused},
		{name: "a link into .git/ is refused", file: "links/git.yaml", wantErr: "links/git.yaml: a symbolic link into .git/", wantIs: ErrRefused},
		{name: "a file in .git/ is refused", file: ".git/secret.yaml", wantErr: ".git/secret.yaml: in .git/", wantIs: ErrRefused},
		{name: "a file in a submodule's .git/ is refused", file: "sub/.git/config", wantErr: "sub/.git/config: in .git/", wantIs: ErrRefused},
		{name: "a path leaving the root is refused", file: "../secret/creds.yaml", wantErr: "../secret/creds.yaml: outside the repository root", wantIs: ErrRefused},
		{name: "an absolute path is refused", file: "/etc/passwd", wantErr: "outside the repository root", wantIs: ErrRefused},
		{name: "a named pipe is refused before it is opened", file: "base/pipe.yaml", wantErr: "base/pipe.yaml: not a regular file", wantIs: ErrRefused},
		{name: "a file over the maximum file size is refused naming the flag", file: "big.yaml", wantErr: "big.yaml: 102 bytes is over the maximum file size of 100 bytes (raise it with --max-file-size)", wantIs: ErrLimitExceeded},
		{name: "aliases written out count against the maximum file size", file: "laughs.yaml", wantErr: "laughs.yaml: exceeds the maximum file size (with its YAML aliases written out)", wantIs: ErrLimitExceeded},
		{name: "a missing file matches fs.ErrNotExist", file: "base/missing.yaml", wantErr: "reading base/missing.yaml", wantIs: fs.ErrNotExist},
		{name: "a dangling link reads as missing", file: "links/dangling", wantErr: "links/dangling", wantIs: fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := Open(root, Limits{MaxFileSize: 100, MaxTotalSize: 1000})
			g.Expect(err).NotTo(HaveOccurred())
			content, err := r.ReadFile(tt.file)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(content)).To(Equal(tt.want))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(errors.Is(err, tt.wantIs)).To(BeTrue(), "errors.Is(%v, %v)", err, tt.wantIs)
			g.Expect(err.Error()).NotTo(ContainSubstring("CANARY"))
			g.Expect(err.Error()).NotTo(ContainSubstring(filepath.Dir(root)), "a refusal names the file relative to the root")
		})
	}
}

func TestReadsAreBoundedInAll(t *testing.T) {
	g := NewWithT(t)
	root, _ := hostileRepository(t)
	r, err := Open(root, Limits{MaxFileSize: 100, MaxTotalSize: 150})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.ReadFile("exact.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.ReadFile("exact.yaml")
	g.Expect(err).To(MatchError("exact.yaml: 200 bytes is over the maximum rendered size, which also bounds what is read in all, of 150 bytes (raise it with --max-rendered-size)"))
	g.Expect(errors.Is(err, ErrLimitExceeded)).To(BeTrue())
}

func TestReadStreamIsBounded(t *testing.T) {
	g := NewWithT(t)
	r, err := Open(t.TempDir(), Limits{MaxFileSize: 10, MaxTotalSize: 100})
	g.Expect(err).NotTo(HaveOccurred())
	zero, err := os.Open("/dev/zero")
	g.Expect(err).NotTo(HaveOccurred())
	defer zero.Close()
	_, err = r.ReadStream("<stdin>", zero)
	g.Expect(err).To(MatchError("<stdin>: exceeds the maximum file size of 10 bytes (raise it with --max-file-size)"))
}

func TestFilesRules(t *testing.T) {
	root, _ := hostileRepository(t)
	yamlFiles := func(name string) bool { return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") }
	tests := []struct {
		name    string
		dir     string
		keep    func(string) bool
		want    []string
		wantErr string
	}{
		{name: "a directory lists its kept files, sorted, relative to the root", dir: "base", keep: func(n string) bool { return n != "pipe.yaml" && yamlFiles(n) },
			want: []string{"base/inside-target.yaml", "base/nested/other.yml", "base/profile.yaml"}},
		{name: "a file lists itself", dir: "base/profile.yaml", keep: yamlFiles, want: []string{"base/profile.yaml"}},
		{name: "names not kept are not looked at", dir: "links", keep: func(n string) bool { return n == "inside.yaml" }, want: []string{"links/inside.yaml"}},
		{name: "the root lists no file of .git/", dir: ".", keep: func(n string) bool { return n == "secret.yaml" || n == "config" }, want: nil},
		{name: "a kept link out of the root is refused", dir: "links", keep: func(n string) bool { return n == "out.yaml" }, wantErr: "links/out.yaml: a symbolic link that leads outside the repository root: refused"},
		{name: "a kept link to a device is refused", dir: "links", keep: func(n string) bool { return n == "zero.yaml" }, wantErr: "links/zero.yaml: a symbolic link that leads outside"},
		{name: "a kept link into .git/ is refused", dir: "links", keep: func(n string) bool { return n == "git.yaml" }, wantErr: "links/git.yaml: a symbolic link into .git/"},
		{name: "a kept pipe is refused", dir: "base", keep: func(n string) bool { return n == "pipe.yaml" }, wantErr: "base/pipe.yaml: not a regular file"},
		{name: "a link to a directory out of the root is not followed", dir: "links", keep: func(n string) bool { return n == "creds.yaml" }, want: nil},
		{name: "a directory link out of the root is refused when asked for", dir: "links/outdir", keep: yamlFiles, wantErr: "links/outdir: a symbolic link that leads outside"},
		{name: ".git/ is refused when asked for", dir: ".git", keep: yamlFiles, wantErr: ".git: in .git/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := Open(root, Limits{})
			g.Expect(err).NotTo(HaveOccurred())
			files, err := r.Files(tt.dir, tt.keep)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(errors.Is(err, ErrRefused)).To(BeTrue())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(files).To(Equal(tt.want))
		})
	}
}

func TestRel(t *testing.T) {
	g := NewWithT(t)
	root, outside := hostileRepository(t)
	r, err := Open(root, Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	rel, err := r.Rel(filepath.Join(root, "base", "profile.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel).To(Equal("base/profile.yaml"))
	rel, err = r.Rel(root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel).To(Equal("."))
	_, err = r.Rel(filepath.Join(outside, "creds.yaml"))
	g.Expect(err).To(MatchError(ContainSubstring("outside the repository root: refused")))
}

func TestRepositoryOf(t *testing.T) {
	root, outside := hostileRepository(t)
	tests := []struct {
		name, path, want string
	}{
		{name: "a directory in a repository is in the repository", path: filepath.Join(root, "base", "nested"), want: root},
		{name: "a file in a repository is in the repository", path: filepath.Join(root, "base", "profile.yaml"), want: root},
		{name: "a directory outside any repository is its own root", path: outside, want: outside},
		{name: "a file outside any repository has its directory as root", path: filepath.Join(outside, "creds.yaml"), want: outside},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := RepositoryOf(tt.path)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestResolveLinks(t *testing.T) {
	root, outside := hostileRepository(t)
	links := map[string]string{
		"links/dangling-out.yaml": "../../secret/missing.yaml",
		"links/dangling-git.yaml": "../.git/missing.yaml",
		"links/chain.yaml":        "inside.yaml",
		"links/loop-a":            "loop-b",
		"links/loop-b":            "loop-a",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, path, want, wantErr string
	}{
		{name: "a path without links is itself", path: "base/profile.yaml", want: filepath.Join(root, "base", "profile.yaml")},
		{name: "a missing path without links is itself", path: "base/missing.yaml", want: filepath.Join(root, "base", "missing.yaml")},
		{name: "a link inside is resolved", path: "links/inside.yaml", want: filepath.Join(root, "base", "inside-target.yaml")},
		{name: "a chain of links is resolved", path: "links/chain.yaml", want: filepath.Join(root, "base", "inside-target.yaml")},
		{name: "a link to a missing file out of the root leads there", path: "links/dangling-out.yaml", want: filepath.Join(outside, "missing.yaml")},
		{name: "a link to a missing file in .git/ leads there", path: "links/dangling-git.yaml", want: filepath.Join(root, ".git", "missing.yaml")},
		{name: "an absolute link is resolved", path: "links/zero.yaml", want: "/dev/zero"},
		{name: "a path through a linked directory is resolved", path: "links/outdir/creds.yaml", want: filepath.Join(outside, "creds.yaml")},
		{name: "a loop of links is an error", path: "links/loop-a", wantErr: "more than 40 symbolic links on the way"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ResolveLinks(filepath.Join(root, filepath.FromSlash(tt.path)))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestCheckPathRefusesADanglingLinkByWhereItLeads(t *testing.T) {
	root, _ := hostileRepository(t)
	for name, target := range map[string]string{"out.yaml": "../secret/missing.yaml", "git.yaml": ".git/missing.yaml"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	g := NewWithT(t)
	_, err := CheckPath(root, filepath.Join(root, "out.yaml"), "out.yaml")
	g.Expect(err).To(MatchError("out.yaml: a symbolic link that leads outside the repository root: refused"))
	_, err = CheckPath(root, filepath.Join(root, "git.yaml"), "git.yaml")
	g.Expect(err).To(MatchError("git.yaml: a symbolic link into .git/, Git's metadata: refused"))
}

func TestFindRootFallsBackToTheWorkingDirectoryOutsideGit(t *testing.T) {
	parent := t.TempDir()
	overlay := filepath.Join(parent, "overlays", "bench")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, workingDirectory string
		want                   Root
	}{
		{name: "the working directory contains the path: it is the root", workingDirectory: parent,
			want: Root{Dir: parent, Chosen: RootWorkingDirectory}},
		{name: "the path is the working directory", workingDirectory: overlay,
			want: Root{Dir: overlay, Chosen: RootWorkingDirectory}},
		{name: "the working directory does not contain the path: the path's own directory", workingDirectory: t.TempDir(),
			want: Root{Dir: overlay, Chosen: RootOwnDirectory}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			t.Chdir(tt.workingDirectory)
			got, err := FindRoot(overlay)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(got.Describe()).To(ContainSubstring("the root is " + tt.want.Dir))
			g.Expect(got.Describe()).To(ContainSubstring("set --root"))
		})
	}
}
