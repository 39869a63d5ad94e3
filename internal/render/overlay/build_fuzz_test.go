package overlay

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesync/profilesync/test/builders"
)

// networkAttempts counts what a build tries to reach, with nothing sent: the
// default HTTP transport (kustomize's file loader uses it) refuses and
// counts every request, and `git` on PATH is a script that records its
// arguments and fails (kustomize clones by running it).
type networkAttempts struct {
	http   atomic.Int64
	gitLog string
}

type refusingTransport struct{ attempts *atomic.Int64 }

func (t refusingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	t.attempts.Add(1)
	return nil, errNetworkInTest
}

var errNetworkInTest = &os.PathError{Op: "dial", Path: "network", Err: os.ErrPermission}

func watchNetwork(tb testing.TB) *networkAttempts {
	tb.Helper()
	attempts := &networkAttempts{}
	bin := tb.TempDir()
	attempts.gitLog = filepath.Join(bin, "git.log")
	script := "#!/bin/sh\necho \"$@\" >> " + attempts.gitLog + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		tb.Fatal(err)
	}
	previousTransport, previousPath := http.DefaultTransport, os.Getenv("PATH")
	http.DefaultTransport = refusingTransport{attempts: &attempts.http}
	if err := os.Setenv("PATH", bin); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		http.DefaultTransport = previousTransport
		_ = os.Setenv("PATH", previousPath)
	})
	return attempts
}

func (a *networkAttempts) check(t *testing.T) {
	t.Helper()
	if n := a.http.Load(); n > 0 {
		t.Fatalf("the build sent %d HTTP requests", n)
	}
	if log, err := os.ReadFile(a.gitLog); err == nil {
		t.Fatalf("the build ran git: %s", log)
	}
}

const (
	outsideSecret = "fuzz-outside-secret"
	gitSecret     = "fuzz-git-secret"
)

// FuzzBuildStaysInTheRepository builds random kustomization trees inside a
// temporary root, with a secret file beside the root, another in .git/, and
// a symbolic link whose target the fuzzer chooses. A build may fail, but it
// never sends a request or runs git, never puts either secret into its
// output or errors, and never panics.
func FuzzBuildStaysInTheRepository(f *testing.F) {
	attempts := watchNetwork(f)
	canaryURL := "http://127.0.0.1:9/meta-data"
	seeds := []struct{ kustomization, resource, link string }{
		{kustomization("profile.yaml"), fmt.Sprintf(minimalCloudProfile, "p"), "profile.yaml"},
		{kustomization(canaryURL), "", ""},
		{kustomization("github.com/org/repo//base?ref=v1"), "", ""},
		{kustomization("base") + "patches:\n- path: " + canaryURL + "\n", "", ""},
		{"configMapGenerator:\n- name: leak\n  files:\n  - ../outside/secret.txt\n  - token=" + canaryURL + "\n", "", ""},
		{"configMapGenerator:\n- name: leak\n  files:\n  - link\n", "", "../outside/secret.txt"},
		{"configMapGenerator:\n- name: leak\n  envs:\n  - .git/config\n", "", ".git/config"},
		{kustomization("link"), "", ".git"},
		{kustomization("link"), "", "/etc"},
		{"transformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata: {name: t}\n  path: " + canaryURL + "\n", "", ""},
		{"generators:\n- gen.yaml\n", "apiVersion: builtin\nkind: SecretGenerator\nmetadata: {name: s}\nfiles: [../outside/secret.txt]\n", ""},
		{kustomization("profile.yaml") + "replacements:\n- path: link\n", fmt.Sprintf(minimalCloudProfile, "p"), "../outside/secret.txt"},
		{kustomization("profile.yaml") + "openapi:\n  path: " + canaryURL + "\n", fmt.Sprintf(minimalCloudProfile, "p"), ""},
		{"components:\n- ssh://git@127.0.0.1/org/repo.git\n", "", ""},
		{kustomization("profile.yaml"), billionLaughs, ""},
	}
	for _, seed := range seeds {
		f.Add(seed.kustomization, seed.resource, seed.link)
	}
	f.Fuzz(func(t *testing.T, kustomizationYAML, resource, link string) {
		dir := t.TempDir()
		root := filepath.Join(dir, "repo")
		files := map[string]string{
			"outside/secret.txt":           outsideSecret + "\n",
			"repo/.git/config":             "[remote \"origin\"]\n\turl = https://x:" + gitSecret + "@example.com/r.git\n",
			"repo/kustomization.yaml":      kustomizationYAML,
			"repo/profile.yaml":            resource,
			"repo/gen.yaml":                resource,
			"repo/base/kustomization.yaml": kustomization("../profile.yaml"),
		}
		builders.WriteTree(t, dir, files)
		if link != "" && !strings.ContainsRune(link, 0) {
			_ = os.Symlink(link, filepath.Join(root, "link"))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		docs, err := Build(ctx, root, ".", Limits{MaxFileSize: 64 << 10, MaxRenderedSize: 256 << 10})
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("a build of a few small files took %s: %v", took, err)
		}
		attempts.check(t)
		for _, doc := range docs {
			for _, secret := range []string{outsideSecret, gitSecret} {
				if strings.Contains(string(doc.Data), secret) {
					t.Fatalf("the output of %s holds %s:\n%s", doc.File, secret, doc.Data)
				}
			}
		}
		if err != nil {
			for _, secret := range []string{outsideSecret, gitSecret} {
				if strings.Contains(err.Error(), secret) && !strings.Contains(kustomizationYAML+resource+link, secret) {
					t.Fatalf("the error holds %s: %v", secret, err)
				}
			}
		}
	})
}
