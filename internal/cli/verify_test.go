package cli

import (
	"crypto/ed25519"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

// seededSSHKey is an SSH Ed25519 key made from a fixed seed, so that its
// fingerprint and signatures, and so the commits it signs, are the same in
// every run (the golden output names them).
func seededSSHKey(t *testing.T, seed byte) ssh.Signer {
	t.Helper()
	signer, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed([]byte(strings.Repeat(string(rune('a'+seed)), ed25519.SeedSize))))
	if err != nil {
		t.Fatal(err)
	}
	return signer
}

// sshCommitSigner signs commits through go-git as git does with
// gpg.format=ssh.
type sshCommitSigner struct{ key ssh.Signer }

func (s sshCommitSigner) Sign(message io.Reader) ([]byte, error) {
	signature, err := sshsig.Sign(message, s.key, sshsig.HashSHA512, "git")
	if err != nil {
		return nil, err
	}
	return sshsig.Armor(signature), nil
}

// signedRepo is a repository of five commits at fixed times: a prod owner's
// first, a dev's change of dev, a dev's change of prod, an unsigned one and
// a stranger's; it returns the directory, the commits in order, and the
// allowed_signers and path rules files beside it.
func signedRepo(t *testing.T) (dir string, commits []string, allowedSigners, pathRules string) {
	t.Helper()
	g := NewWithT(t)
	prodOwner, dev, stranger := seededSSHKey(t, 0), seededSSHKey(t, 1), seededSSHKey(t, 2)
	dir = t.TempDir()
	repo, err := git.PlainInit(dir, false)
	g.Expect(err).NotTo(HaveOccurred())
	worktree, err := repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	for i, step := range []struct {
		file, content string
		key           ssh.Signer
	}{
		{"overlays/prod/profile.yaml", "prod: 1\n", prodOwner},
		{"overlays/dev/profile.yaml", "dev: 2\n", dev},
		{"overlays/prod/profile.yaml", "prod: 2\n", dev},
		{"overlays/dev/profile.yaml", "dev: 3\n", nil},
		{"overlays/dev/profile.yaml", "dev: 4\n", stranger},
	} {
		path := filepath.Join(dir, filepath.FromSlash(step.file))
		g.Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(path, []byte(step.content), 0o644)).To(Succeed())
		g.Expect(worktree.AddWithOptions(&git.AddOptions{All: true})).To(Succeed())
		options := &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "test@example.com", When: time.Date(2026, 11, 20, 12, i, 0, 0, time.UTC)}}
		if step.key != nil {
			options.Signer = sshCommitSigner{step.key}
		}
		hash, err := worktree.Commit(step.file, options)
		g.Expect(err).NotTo(HaveOccurred())
		commits = append(commits, hash.String())
	}
	keysDir := t.TempDir()
	allowedSigners = filepath.Join(keysDir, "allowed_signers")
	line := func(principal string, key ssh.Signer) string {
		return principal + " " + string(ssh.MarshalAuthorizedKey(key.PublicKey()))
	}
	g.Expect(os.WriteFile(allowedSigners, []byte(line("prod-owner", prodOwner)+line("dev", dev)), 0o644)).To(Succeed())
	pathRules = filepath.Join(keysDir, "path-rules.yaml")
	g.Expect(os.WriteFile(pathRules, []byte("- paths: [overlays/prod/**]\n  principals: [prod-owner]\n"), 0o644)).To(Succeed())
	return dir, commits, allowedSigners, pathRules
}

// TestVerifyPrintsEachCommitsVerdict: verify prints one verdict per commit
// of the range, oldest first, and exits 1 when one is refused: a dev key's
// change of prod under a path rule, an unsigned commit and a stranger's.
func TestVerifyPrintsEachCommitsVerdict(t *testing.T) {
	g := NewWithT(t)
	dir, commits, allowedSigners, pathRules := signedRepo(t)
	at := "--at=2026-12-01T00:00:00Z"

	status, stdout, stderr := run(t, "verify", "", "--repo", dir, "--allowed-signers", allowedSigners, "--path-rules", pathRules, at, commits[0]+"..HEAD")
	g.Expect(status).To(Equal(exitInvalidInput), stderr)
	g.Expect(stderr).To(BeEmpty())
	assertGolden(t, filepath.Join("testdata", "verify", "range.txt"), stdout)

	status, stdout, stderr = run(t, "verify", "", "--repo", dir, "--allowed-signers", allowedSigners, "--path-rules", pathRules, at, commits[0]+".."+commits[1])
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stdout).To(HavePrefix("verified commit " + commits[1] + ": signed by SSH key SHA256:"))

	status, stdout, _ = run(t, "verify", "", "--repo", dir, "--allowed-signers", allowedSigners, at, commits[1]+".."+commits[2])
	g.Expect(status).To(Equal(exitOK), "without path rules, the dev key may change prod: %s", stdout)

	status, _, stderr = run(t, "verify", "", "--repo", dir, "--allowed-signers", allowedSigners, "--path-rules", pathRules, "--max-commits", "2", at, commits[0]+"..HEAD")
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stderr).To(ContainSubstring("raise --max-commits"))

	status, _, stderr = run(t, "verify", "", "--repo", dir, at, "HEAD")
	g.Expect(status).To(Equal(exitUsage))
	g.Expect(stderr).To(ContainSubstring("give the trusted keys with --keys or --allowed-signers"))

	status, _, stderr = run(t, "verify", "", "--repo", dir, "--keys", allowedSigners+".missing", at, "HEAD")
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stderr).To(ContainSubstring("--keys"))
}

// TestBuildAndDiffVerifyBeforeTheyBuild: with --verify-allowed-signers,
// diff verifies --base..--head and build the repository's HEAD before
// building anything; a refused commit fails them with nothing on stdout.
func TestBuildAndDiffVerifyBeforeTheyBuild(t *testing.T) {
	g := NewWithT(t)
	_, _, allowedSigners, _ := signedRepo(t)
	repo := diffRepo(t, "")
	status, stdout, stderr := run(t, "diff", "", "--repo", repo, "--base", "main", "--head", "pr", "--verify-allowed-signers", allowedSigners)
	g.Expect(status).To(Equal(exitInvalidInput), stderr)
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(MatchRegexp(`refused  commit [0-9a-f]{40}: unsigned`))

	status, _, stderr = run(t, "diff", "", "--base-dir", repo, "--head-dir", repo, "--verify-allowed-signers", allowedSigners)
	g.Expect(status).To(Equal(exitUsage))
	g.Expect(stderr).To(ContainSubstring("they need --base and --head"))

	overlays, err := filepath.Glob(filepath.Join(repo, "overlays", "*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(overlays).NotTo(BeEmpty())
	status, stdout, stderr = run(t, "build", "", "--verify-allowed-signers", allowedSigners, overlays[0])
	g.Expect(status).To(Equal(exitInvalidInput), stderr)
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(MatchRegexp(`refused  commit [0-9a-f]{40}: unsigned`))
}
