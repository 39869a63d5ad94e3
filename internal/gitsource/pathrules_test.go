package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/packet"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/crypto/ssh"

	"github.com/profilesync/profilesync/test/gitserver"
)

func TestDeniedPaths(t *testing.T) {
	rules := []PathRule{
		{Paths: []string{"overlays/prod/**"}, Principals: []string{"prod-owner"}},
		{Paths: []string{"overlays/*/secrets.yaml", "base"}, Principals: []string{"security"}},
	}
	prodOwner := Signer{Key: "SSH key SHA256:p", Principals: []string{"prod-owner"}}
	dev := Signer{Key: "SSH key SHA256:d", Principals: []string{"dev@example.com"}}
	both := Signer{Key: "OpenPGP key X", Principals: []string{"prod-owner", "security"}}
	tests := []struct {
		name    string
		changed []string
		signer  Signer
		denied  []string // "path rule-index"
	}{
		{"a dev key may change dev's overlay, which no rule matches", []string{"overlays/dev/profile.yaml"}, dev, nil},
		{"a dev key may not change prod's overlay", []string{"overlays/dev/a.yaml", "overlays/prod/profile.yaml"}, dev, []string{"overlays/prod/profile.yaml 0"}},
		{"a prod owner may change prod's overlay", []string{"overlays/prod/deep/er/profile.yaml"}, prodOwner, nil},
		{"a path two rules match needs a principal of each", []string{"overlays/prod/secrets.yaml"}, prodOwner, []string{"overlays/prod/secrets.yaml 1"}},
		{"a signer with both principals passes both rules", []string{"overlays/prod/secrets.yaml", "base/kustomization.yaml"}, both, nil},
		{"a directory pattern covers everything under it", []string{"base/kustomization.yaml"}, dev, []string{"base/kustomization.yaml 1"}},
		{"a pattern does not match a sibling that shares its prefix", []string{"overlays/production/a.yaml", "baseline.yaml"}, dev, nil},
		{"** matches no directory at all", []string{"overlays/prod"}, dev, []string{"overlays/prod 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range DeniedPaths(tt.changed, rules, tt.signer) {
				got = append(got, fmt.Sprintf("%s %d", d.Path, d.RuleIndex))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.denied) {
				t.Fatalf("denied %v, want %v", got, tt.denied)
			}
		})
	}
}

func TestValidatePathRules(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rules []PathRule
		want  string // a part of the error; empty: valid
	}{
		{"globs and principals are valid", []PathRule{{Paths: []string{"overlays/prod/**"}, Principals: []string{"p"}}}, ""},
		{"a rule without principals is refused", []PathRule{{Paths: []string{"a"}}}, "spec.verify.pathRules[0]: a path rule needs paths and principals"},
		{"a malformed glob is refused", []PathRule{{Paths: []string{"a"}, Principals: []string{"p"}}, {Paths: []string{"[x"}, Principals: []string{"p"}}}, `spec.verify.pathRules[1].paths: "[x" is no glob`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePathRules("spec.verify.pathRules", tt.rules)
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("ValidatePathRules = %v, want %q", err, tt.want)
			}
		})
	}
}

// sshGitSigner signs commits through go-git with an SSH key, as git does
// with gpg.format=ssh.
type sshGitSigner struct {
	t   testing.TB
	key ssh.Signer
}

func (s sshGitSigner) Sign(message io.Reader) ([]byte, error) {
	payload, err := io.ReadAll(message)
	if err != nil {
		return nil, err
	}
	return []byte(sshSign(s.t, payload, s.key, SSHSignatureNamespace)), nil
}

// signedCommit commits files to r signed by key (unsigned when nil).
func (r *exportRepo) signedCommit(files map[string]string, key ssh.Signer) string {
	r.t.Helper()
	for name, content := range files {
		r.writeFile(name, content)
	}
	worktree, err := r.repo.Worktree()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := worktree.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		r.t.Fatal(err)
	}
	options := &git.CommitOptions{Author: r.signature(), AllowEmptyCommits: true}
	if key != nil {
		options.Signer = sshGitSigner{t: r.t, key: key}
	}
	hash, err := worktree.Commit("change", options)
	if err != nil {
		r.t.Fatal(err)
	}
	return hash.String()
}

// TestVerifyRangeRefusesAChangeItsSignerMayNotMake: with path rules, every
// commit since the last applied one is verified, so a prod change signed
// by a dev key is refused even when a prod owner signs the commit on top.
func TestVerifyRangeRefusesAChangeItsSignerMayNotMake(t *testing.T) {
	devKey, prodKey := newSSHKey(t, "ed25519"), newSSHKey(t, "ecdsa")
	keys, err := ParseTrustedKeys("Secret ns/keys", map[string][]byte{AllowedSignersFileName: []byte(
		allowedSignersLine("dev", "", devKey) + "\n" + allowedSignersLine("prod-owner", "", prodKey) + "\n")})
	if err != nil {
		t.Fatal(err)
	}
	rules := RangeOptions{Rules: []PathRule{{Paths: []string{"overlays/prod/**"}, Principals: []string{"prod-owner"}}}, LimitName: "spec.verify.maxCommits"}
	r := newExportRepo(t)
	applied := r.signedCommit(map[string]string{"overlays/dev/a.yaml": "a: 1\n", "overlays/prod/a.yaml": "a: 1\n"}, prodKey)
	devChange := r.signedCommit(map[string]string{"overlays/dev/a.yaml": "a: 2\n"}, devKey)
	smuggled := r.signedCommit(map[string]string{"overlays/prod/a.yaml": "a: 2\n"}, devKey)
	trivial := r.signedCommit(map[string]string{"README": "prod-owner was here\n"}, prodKey)
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

	verdicts, err := VerifyRange(r.repo, applied, devChange, keys, at, rules)
	if err != nil || FirstRefusal(verdicts) != nil || len(verdicts) != 1 || verdicts[0].Changed[0] != "overlays/dev/a.yaml" {
		t.Fatalf("a dev key's change of dev = %+v, %v; want it verified", verdicts, err)
	}
	verdicts, err = VerifyRange(r.repo, applied, trivial, keys, at, rules)
	if err != nil || len(verdicts) != 3 {
		t.Fatalf("VerifyRange = %+v, %v; want the 3 commits since the last applied one", verdicts, err)
	}
	refusal := FirstRefusal(verdicts)
	var failed *VerificationError
	if !errors.As(refusal, &failed) || failed.Failure != PathRuleRefused || failed.Commit != smuggled ||
		!strings.Contains(refusal.Error(), "overlays/prod/a.yaml") || !strings.Contains(refusal.Error(), "prod-owner") || !strings.Contains(refusal.Error(), "(dev)") {
		t.Fatalf("refusal %v, want commit %s refused for overlays/prod/a.yaml, naming the dev signer and prod-owner", refusal, smuggled)
	}
	if verdicts[0].Commit != trivial || verdicts[0].Err != nil {
		t.Fatalf("the prod owner's commit on top verifies on its own: %+v", verdicts[0])
	}

	first, err := VerifyRange(r.repo, "", devChange, keys, at, rules)
	if err != nil || len(first) != 1 || !errors.As(FirstRefusal(first), &failed) || failed.Failure != PathRuleRefused {
		t.Fatalf("a first apply = %+v, %v; want the dev key refused for prod's files of the whole tree", first, err)
	}
	_, err = VerifyRange(r.repo, applied, trivial, keys, at, RangeOptions{Rules: rules.Rules, MaxCommits: 2, LimitName: "spec.verify.maxCommits"})
	if !errors.Is(err, ErrRangeTooLong) || !strings.Contains(err.Error(), "raise spec.verify.maxCommits") {
		t.Fatalf("a range over the bound = %v, want ErrRangeTooLong naming the field", err)
	}
}

// TestVerifyRevisionModes: HEAD checks the commit, Tag the annotated tag,
// TagAndHEAD both; Tag refuses a revision taken from no tag and a
// lightweight tag.
func TestVerifyRevisionModes(t *testing.T) {
	pgpKey := newTestKey(t, "releaser", packet.PubKeyAlgoEdDSA, packet.Curve25519, 0)
	sshKey := newSSHKey(t, "ed25519")
	keys, err := ParseTrustedKeys("Secret ns/keys", map[string][]byte{
		"releaser.asc":         armoredPublicKey(t, pgpKey),
		AllowedSignersFileName: []byte(allowedSignersLine("dev", "", sshKey)),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := newExportRepo(t)
	unsigned := r.signedCommit(map[string]string{"a.yaml": "a: 1\n"}, nil)
	signed := r.signedCommit(map[string]string{"a.yaml": "a: 2\n"}, sshKey)
	tagger := r.signature()
	if _, err := r.repo.CreateTag("v1-unsigned-commit", plumbing.NewHash(unsigned), &git.CreateTagOptions{Tagger: tagger, Message: "v1\n", SignKey: pgpKey}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.repo.CreateTag("v2", plumbing.NewHash(signed), &git.CreateTagOptions{Tagger: tagger, Message: "v2\n", SignKey: pgpKey}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.repo.CreateTag("v2-unsigned", plumbing.NewHash(signed), &git.CreateTagOptions{Tagger: tagger, Message: "v2\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.repo.CreateTag("v2-light", plumbing.NewHash(signed), nil); err != nil {
		t.Fatal(err)
	}
	// go-git signs tags at the wall clock's time; the keys never expire.
	at := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		commit string
		check  RevisionCheck
		want   string // a part of the refusal; empty: verifies
	}{
		{"HEAD verifies a signed commit", signed, RevisionCheck{Mode: VerifyModeHEAD}, ""},
		{"HEAD refuses an unsigned commit", unsigned, RevisionCheck{Mode: VerifyModeHEAD, Tag: "v1-unsigned-commit"}, "commit " + unsigned + ": unsigned"},
		{"Tag verifies a signed annotated tag of an unsigned commit", unsigned, RevisionCheck{Mode: VerifyModeTag, Tag: "v1-unsigned-commit"}, ""},
		{"Tag refuses an unsigned annotated tag", signed, RevisionCheck{Mode: VerifyModeTag, Tag: "v2-unsigned"}, `tag "v2-unsigned"`},
		{"Tag refuses a lightweight tag", signed, RevisionCheck{Mode: VerifyModeTag, Tag: "v2-light"}, `tag "v2-light" is a lightweight tag`},
		{"Tag refuses a revision taken from no tag", signed, RevisionCheck{Mode: VerifyModeTag}, "the revision is taken from no tag"},
		{"TagAndHEAD verifies a signed tag of a signed commit", signed, RevisionCheck{Mode: VerifyModeTagAndHEAD, Tag: "v2"}, ""},
		{"TagAndHEAD refuses a signed tag of an unsigned commit", unsigned, RevisionCheck{Mode: VerifyModeTagAndHEAD, Tag: "v1-unsigned-commit"}, "commit " + unsigned + ": unsigned"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			verdicts, err := VerifyRevisionOf(r.repo, tt.commit, tt.check, keys, at)
			if err != nil {
				t.Fatal(err)
			}
			refusal := FirstRefusal(verdicts)
			if tt.want == "" {
				if refusal != nil {
					t.Fatalf("refused: %v", refusal)
				}
				return
			}
			if !errors.Is(refusal, ErrVerificationFailed) || !strings.Contains(refusal.Error(), tt.want) {
				t.Fatalf("refusal %v, want one naming %q", refusal, tt.want)
			}
		})
	}
}

// BenchmarkVerifyRangeWithPathRules is the cost of a revision 100 commits
// past the last applied one with path rules: every commit's signature
// (SSH Ed25519) and its diff against its parent, in a repository of 150
// files.
func BenchmarkVerifyRangeWithPathRules(b *testing.B) {
	key := newSSHKey(b, "ed25519")
	keys, err := ParseTrustedKeys("bench", map[string][]byte{AllowedSignersFileName: []byte(allowedSignersLine("prod-owner", "", key))})
	if err != nil {
		b.Fatal(err)
	}
	r := newExportRepo(b)
	files := map[string]string{}
	for i := range 150 {
		files[fmt.Sprintf("overlays/%s/profile-%03d.yaml", []string{"dev", "staging", "prod"}[i%3], i)] = "a: 0\n"
	}
	base := r.signedCommit(files, key)
	var tip string
	for i := range 100 {
		tip = r.signedCommit(map[string]string{fmt.Sprintf("overlays/prod/profile-%03d.yaml", (i*3+2)%150): fmt.Sprintf("a: %d\n", i+1)}, key)
	}
	options := RangeOptions{Rules: []PathRule{{Paths: []string{"overlays/prod/**"}, Principals: []string{"prod-owner"}}}, LimitName: "bench"}
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		verdicts, err := VerifyRange(r.repo, base, tip, keys, at, options)
		if err != nil || len(verdicts) != 100 || FirstRefusal(verdicts) != nil {
			b.Fatalf("VerifyRange = %d verdicts, %v, %v", len(verdicts), err, FirstRefusal(verdicts))
		}
	}
}

// TestAFetchedRevisionIsVerifiedAsItsModeSays: the checkout of a tag ref
// holds the annotated tag, so mode Tag verifies it (here refused: the tag
// is unsigned) and tells a lightweight tag; with History, a branch's
// checkout keeps the commits path rules verify, which a shallow one lacks.
func TestAFetchedRevisionIsVerifiedAsItsModeSays(t *testing.T) {
	server := startGitServer(t, gitserver.Options{})
	first := seededRepo(t, server, "tags")
	key := newSSHKey(t, "ed25519")
	second, err := server.CommitSigned("tags", map[string]string{"profile.yaml": "version: 2\n"}, "v2", func(payload io.Reader) (string, error) {
		content, err := io.ReadAll(payload)
		return sshSign(t, content, key, SSHSignatureNamespace), err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.AnnotatedTag("tags", "v2", second, "release v2"); err != nil {
		t.Fatal(err)
	}
	tag(t, server, "tags", "v2-light", second)
	fetcher := newTestFetcher(t, FetcherOptions{})
	keys, err := ParseTrustedKeys("Secret ns/keys", map[string][]byte{AllowedSignersFileName: []byte(allowedSignersLine("dev", "", key))})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		tag, want string
	}{
		{"v2", `tag "v2"`},
		{"v2-light", `tag "v2-light" is a lightweight tag`},
	} {
		checkout, err := fetcher.Fetch(context.Background(), Request{URL: server.RepoURL("tags"), Ref: Ref{Tag: tt.tag}, CacheKey: "ns/" + tt.tag})
		if err != nil {
			t.Fatal(err)
		}
		verdicts, err := VerifyRevision(checkout.Dir, checkout.Commit, RevisionCheck{Mode: VerifyModeTag, Tag: RefOfRevision(checkout.Revision)}, keys, at, ObjectLimitsFor(0))
		if err != nil {
			t.Fatalf("tag %s: %v", tt.tag, err)
		}
		var failed *VerificationError
		if refusal := FirstRefusal(verdicts); !errors.As(refusal, &failed) || failed.Failure != Unsigned || !strings.Contains(refusal.Error(), tt.want) {
			t.Fatalf("tag %s: refusal %v, want unsigned naming %q", tt.tag, refusal, tt.want)
		}
	}

	rules := RangeOptions{Rules: []PathRule{{Paths: []string{"profile.yaml"}, Principals: []string{"dev"}}}}
	for _, history := range []bool{false, true} {
		checkout, err := fetcher.Fetch(context.Background(), Request{URL: server.RepoURL("tags"), CacheKey: "ns/branch", History: history})
		if err != nil {
			t.Fatal(err)
		}
		verdicts, err := VerifyRevision(checkout.Dir, checkout.Commit, RevisionCheck{LastApplied: first, Range: rules}, keys, at, ObjectLimitsFor(0))
		if err != nil {
			t.Fatalf("history %v: %v", history, err)
		}
		// Without history the last applied commit is not in the checkout:
		// the tip alone is verified, as a first apply. With it, the one
		// commit since.
		if len(verdicts) != 1 || verdicts[0].Commit != second || verdicts[0].Err != nil || (history && fmt.Sprint(verdicts[0].Changed) != "[profile.yaml]") || (!history && len(verdicts[0].Changed) != 2) {
			t.Fatalf("history %v: verdicts %+v", history, verdicts)
		}
	}
}

// TestVerifyRangeOfAMergedBranchStopsWhereItForked: a branch forked below
// the last applied commit and merged after it brings its own commits into
// the range, and nothing below where it forked (git's applied..merge).
func TestVerifyRangeOfAMergedBranchStopsWhereItForked(t *testing.T) {
	devKey, prodKey := newSSHKey(t, "ed25519"), newSSHKey(t, "ed25519")
	keys, err := ParseTrustedKeys("Secret ns/keys", map[string][]byte{AllowedSignersFileName: []byte(
		allowedSignersLine("dev", "", devKey) + "\n" + allowedSignersLine("prod-owner", "", prodKey) + "\n")})
	if err != nil {
		t.Fatal(err)
	}
	r := newExportRepo(t)
	unsigned := r.signedCommit(map[string]string{"overlays/dev/a.yaml": "a: 0\n", "overlays/prod/a.yaml": "a: 0\n"}, nil)
	forked := r.signedCommit(map[string]string{"overlays/dev/a.yaml": "a: 1\n"}, devKey)
	side := r.signedCommit(map[string]string{"overlays/dev/a.yaml": "a: 2\n"}, devKey)
	worktree, err := r.repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := worktree.Reset(&git.ResetOptions{Commit: plumbing.NewHash(forked), Mode: git.HardReset}); err != nil {
		t.Fatal(err)
	}
	applied := r.signedCommit(map[string]string{"overlays/prod/a.yaml": "a: 2\n"}, prodKey)
	r.writeFile("overlays/dev/a.yaml", "a: 2\n")
	if err := worktree.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	merge, err := worktree.Commit("merge", &git.CommitOptions{Author: r.signature(), Parents: []plumbing.Hash{plumbing.NewHash(applied), plumbing.NewHash(side)}, Signer: sshGitSigner{t: t, key: prodKey}})
	if err != nil {
		t.Fatal(err)
	}
	rules := RangeOptions{Rules: []PathRule{{Paths: []string{"overlays/prod/**"}, Principals: []string{"prod-owner"}}}}
	verdicts, err := VerifyRange(r.repo, applied, merge.String(), keys, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), rules)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, verdict := range verdicts {
		got = append(got, fmt.Sprintf("%s %v %v", verdict.Commit, verdict.Changed, verdict.Err))
	}
	want := []string{merge.String() + " [] <nil>", side + " [overlays/dev/a.yaml] <nil>"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("verdicts %v, want %v: the merge (bringing nothing of its own) and the side branch's commit, not the unsigned %s below the fork", got, want, unsigned)
	}
}

func TestMatchPathGlob(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"overlays/prod/**", "overlays/prod/a.yaml", true},
		{"overlays/prod/**", "overlays/prod", true},
		{"overlays/prod/**", "overlays/production/a.yaml", false},
		{"overlays/*/secrets.yaml", "overlays/dev/secrets.yaml", true},
		{"overlays/*/secrets.yaml", "overlays/dev/deep/secrets.yaml", false},
		{"**/secrets.yaml", "overlays/dev/deep/secrets.yaml", true},
		{"**/secrets.yaml", "secrets.yaml", true},
		{"overlays/**/kustomization.yaml", "overlays/kustomization.yaml", true},
		{"overlays/**/kustomization.yaml", "overlays/a/b/kustomization.yaml", true},
		{"overlays/**/kustomization.yaml", "base/kustomization.yaml", false},
		{"base", "base/kustomization.yaml", true},
		{"ba?e", "base", true},
		{strings.Repeat("**/", 150) + "x", strings.Repeat("a/", 60) + "y", false},
	} {
		t.Run(tt.pattern+" on "+tt.name, func(t *testing.T) {
			got, err := matchPathGlob(tt.pattern, tt.name)
			if err != nil || got != tt.want {
				t.Fatalf("matchPathGlob(%q, %q) = %v, %v; want %v", tt.pattern, tt.name, got, err, tt.want)
			}
		})
	}
}

// FuzzMatchPathGlob: no pattern or path makes the matcher panic, a pattern
// of ** alone matches every path, and a pattern without wildcards matches
// itself when it is a path as a repository's tree holds it (relative,
// clean).
func FuzzMatchPathGlob(f *testing.F) {
	f.Add("overlays/prod/**", "overlays/prod/a.yaml")
	f.Add("**/x/**", "a/x/b")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		_, _ = matchPathGlob(pattern, name)
		if matched, err := matchPathGlob("**", name); err != nil || !matched {
			t.Fatalf("** does not match %q: %v", name, err)
		}
		if !strings.ContainsAny(name, `*?[\`) && name != "" && name == path.Clean(name) && !strings.HasPrefix(name, "/") && name != "." {
			if matched, err := matchPathGlob(name, name); err != nil || !matched {
				t.Fatalf("%q does not match itself: %v", name, err)
			}
		}
	})
}

// TestATagsCheckoutHoldsTheTagTheRemoteLists: a checkout of a commit made
// for one tag is fetched again for another tag of the same commit, and for
// the same tag made again (signed this time), so that modes Tag and
// TagAndHEAD verify the annotated tag the remote lists, not "reference not
// found" nor the old tag object.
func TestATagsCheckoutHoldsTheTagTheRemoteLists(t *testing.T) {
	server := startGitServer(t, gitserver.Options{})
	commit := seededRepo(t, server, "retagged")
	releaser := newTestKey(t, "releaser", packet.PubKeyAlgoEdDSA, packet.Curve25519, 0)
	keys, err := ParseTrustedKeys("Secret ns/keys", map[string][]byte{"releaser.asc": armoredPublicKey(t, releaser)})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := git.PlainOpen(filepath.Join(server.Root(), "retagged.git"))
	if err != nil {
		t.Fatal(err)
	}
	annotatedTag := func(name string, signed bool) {
		t.Helper()
		options := &git.CreateTagOptions{Tagger: &object.Signature{Name: "releaser", Email: "releaser@example.com", When: keysMadeAt.Add(time.Minute)}, Message: name + "\n"}
		if signed {
			options.SignKey = releaser
		}
		if _, err := bare.CreateTag(name, plumbing.NewHash(commit), options); err != nil {
			t.Fatal(err)
		}
	}
	fetcher := newTestFetcher(t, FetcherOptions{})
	verifyTag := func(name string) error {
		t.Helper()
		// One cache key, as one ProfileSync whose spec.ref.tag changes;
		// go-git signs a tag as of now.
		checkout, err := fetcher.Fetch(context.Background(), Request{URL: server.RepoURL("retagged"), Ref: Ref{Tag: name}, CacheKey: "ns/sync"})
		if err != nil {
			t.Fatal(err)
		}
		verdicts, err := VerifyRevision(checkout.Dir, checkout.Commit, RevisionCheck{Mode: VerifyModeTag, Tag: RefOfRevision(checkout.Revision)}, keys, time.Now().Add(time.Minute), ObjectLimitsFor(0))
		if err != nil {
			return err
		}
		return FirstRefusal(verdicts)
	}

	annotatedTag("v1-rc1", true)
	if err := verifyTag("v1-rc1"); err != nil {
		t.Fatalf("the release candidate's signed tag: %v", err)
	}
	annotatedTag("v1", true)
	if err := verifyTag("v1"); err != nil {
		t.Fatalf("the release's signed tag of the same commit, after the candidate's checkout: %v", err)
	}
	before := server.Requests().UploadPacks
	if err := verifyTag("v1"); err != nil {
		t.Fatal(err)
	}
	if again := server.Requests().UploadPacks - before; again != 0 {
		t.Fatalf("the same tag fetched again downloaded %d packs; its checkout holds it already", again)
	}
	annotatedTag("v2", false)
	var failed *VerificationError
	if err := verifyTag("v2"); !errors.As(err, &failed) || failed.Failure != Unsigned {
		t.Fatalf("an unsigned tag: %v, want it refused as unsigned", err)
	}
	if err := bare.DeleteTag("v2"); err != nil {
		t.Fatal(err)
	}
	annotatedTag("v2", true)
	if err := verifyTag("v2"); err != nil {
		t.Fatalf("the tag made again, signed: %v", err)
	}
}
