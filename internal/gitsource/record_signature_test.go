package gitsource

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/profilesync/profilesync/internal/rollout"
)

// testRecordKey is an SSH key made in the test: its signer and its
// private key as ssh-keygen writes it.
type testRecordKey struct {
	signer  *RecordSigner
	private []byte
}

func newTestRecordKey(t testing.TB, kind string) testRecordKey {
	t.Helper()
	block, err := ssh.MarshalPrivateKey(newPrivateKey(t, kind), "")
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(block)
	signer, err := ParseRecordSigningKey("test key", data)
	if err != nil {
		t.Fatal(err)
	}
	return testRecordKey{signer: signer, private: data}
}

// allowedSigners is an allowed_signers line naming landscape.
func (k testRecordKey) allowedSigners(landscape string) string {
	return landscape + " " + k.signer.PublicKey() + "\n"
}

func mustRecordKeys(t *testing.T, lines ...string) RecordKeys {
	t.Helper()
	keys, err := ParseRecordKeys("test allowed_signers", []byte(strings.Join(lines, "")))
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// signedRecordCommit writes record as writeRecordCommit does, signed by
// signer (nil: unsigned), and reads the commit back.
func signedRecordCommit(t testing.TB, repository *git.Repository, record rollout.Record, signer *RecordSigner) *object.Commit {
	t.Helper()
	content, err := rollout.EncodeRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := writeRecordCommit(repository, record, content, plumbing.ZeroHash, signer)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repository.CommitObject(hash)
	if err != nil {
		t.Fatal(err)
	}
	return commit
}

// tampered is commit with the tree of another record and commit's
// signature: what a writer who changed a signed record's content made.
func tampered(t *testing.T, repository *git.Repository, commit *object.Commit, other rollout.Record) *object.Commit {
	t.Helper()
	forged := signedRecordCommit(t, repository, other, nil)
	changed := *commit
	changed.TreeHash = forged.TreeHash
	encoded := repository.Storer.NewEncodedObject()
	if err := changed.Encode(encoded); err != nil {
		t.Fatal(err)
	}
	hash, err := repository.Storer.SetEncodedObject(encoded)
	if err != nil {
		t.Fatal(err)
	}
	read, err := repository.CommitObject(hash)
	if err != nil {
		t.Fatal(err)
	}
	return read
}

func TestVerifyRecordSignature(t *testing.T) {
	revision := strings.Repeat("ab", 20)
	record := appliedRecord("dev", revision, time.Hour)
	backdated := appliedRecord("dev", revision, -30*24*time.Hour)
	for _, kind := range []string{"ed25519", "ecdsa"} {
		t.Run(kind, func(t *testing.T) {
			dev, stranger := newTestRecordKey(t, kind), newTestRecordKey(t, kind)
			keys := mustRecordKeys(t, dev.allowedSigners("dev"), stranger.allowedSigners("staging"))
			repository, err := git.Init(memory.NewStorage(), nil)
			if err != nil {
				t.Fatal(err)
			}
			signed := signedRecordCommit(t, repository, record, dev.signer)
			for _, tc := range []struct {
				name      string
				commit    *object.Commit
				landscape string
				failure   string
				signer    string
				detail    string
			}{
				{name: "a record signed by the landscape's key verifies", commit: signed, landscape: "dev", signer: dev.signer.Fingerprint()},
				{name: "an unsigned record is refused as unsigned", commit: signedRecordCommit(t, repository, backdated, nil), landscape: "dev",
					failure: string(Unsigned), detail: "no signature"},
				{name: "a record signed by another key is refused as an unknown key", commit: signedRecordCommit(t, repository, backdated, stranger.signer), landscape: "dev",
					failure: string(UnknownKey), signer: stranger.signer.Fingerprint(), detail: "no trusted key made it"},
				{name: "a key given for another landscape does not vouch for this one", commit: signed, landscape: "staging",
					failure: string(UnknownKey), signer: dev.signer.Fingerprint(), detail: "no trusted key made it"},
				{name: "a record whose content changed after it was signed is refused as a bad signature", commit: tampered(t, repository, signed, backdated), landscape: "dev",
					failure: string(BadSignature), signer: dev.signer.Fingerprint(), detail: "the signature does not match"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					g := NewWithT(t)
					got := VerifyRecordSignature(tc.commit, tc.landscape, keys, recordTime)
					g.Expect(got.Checked).To(BeTrue())
					g.Expect(got.Verified).To(Equal(tc.failure == ""))
					g.Expect(got.Failure).To(Equal(tc.failure))
					if tc.signer == "" {
						g.Expect(got.Signer).To(BeEmpty())
					} else {
						g.Expect(got.Signer).To(ContainSubstring("SSH key " + tc.signer))
					}
					g.Expect(got.Detail).To(ContainSubstring(tc.detail))
				})
			}
		})
	}
}

func TestARecordSignedForAnotherNamespaceDoesNotVerify(t *testing.T) {
	g := NewWithT(t)
	dev := newTestRecordKey(t, "ed25519")
	repository, err := git.Init(memory.NewStorage(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	commit := signedRecordCommit(t, repository, appliedRecord("dev", strings.Repeat("ab", 20), time.Hour), nil)
	// Signed by dev's key, but as a file (namespace "file"), not a commit.
	payload := &plumbing.MemoryObject{}
	g.Expect(commit.EncodeWithoutSignature(payload)).To(Succeed())
	reader, err := payload.Reader()
	g.Expect(err).NotTo(HaveOccurred())
	signature, err := sshsig.Sign(reader, dev.signer.signer, sshsig.HashSHA512, "file")
	g.Expect(err).NotTo(HaveOccurred())
	commit.PGPSignature = string(sshsig.Armor(signature))
	got := VerifyRecordSignature(commit, "dev", mustRecordKeys(t, dev.allowedSigners("dev")), recordTime)
	g.Expect(got.Verified).To(BeFalse())
	g.Expect(got.Failure).To(Equal(string(BadSignature)))
	g.Expect(got.Detail).To(ContainSubstring(`namespace "file", not "git"`))
}

// TestARecordCommitVerifiesWithGit checks the signature is git's own: `git
// verify-commit` with gpg.format=ssh and an allowed_signers file naming
// the key accepts the record commit the operator writes.
func TestARecordCommitVerifiesWithGit(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Fatal("ssh-keygen, which git verifies SSH signatures with, is not installed: the test needs it as test/gitserver needs git")
	}
	g := NewWithT(t)
	dir := t.TempDir()
	repository, err := git.PlainInit(dir, false)
	g.Expect(err).NotTo(HaveOccurred())
	dev := newTestRecordKey(t, "ed25519")
	commit := signedRecordCommit(t, repository, appliedRecord("dev", strings.Repeat("ab", 20), time.Hour), dev.signer)
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	g.Expect(os.WriteFile(allowed, []byte(recordAuthorEmail+" "+dev.signer.PublicKey()+"\n"), 0o600)).To(Succeed())
	cmd := exec.Command("git", "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", "-v", commit.Hash.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=true")
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(ContainSubstring(`Good "git" signature for ` + recordAuthorEmail))
}

func TestParseRecordKeys(t *testing.T) {
	dev := newTestRecordKey(t, "ed25519")
	prod := newTestRecordKey(t, "ecdsa")
	for _, tc := range []struct {
		name       string
		file       string
		landscapes []string
		err        string
	}{
		{name: "each line names a landscape and its key, comments and blank lines skipped",
			file:       "# the operators' keys\n\n" + dev.allowedSigners("dev") + prod.allowedSigners("prod"),
			landscapes: []string{"dev", "prod"}},
		{name: "one key may sign for several landscapes", file: dev.allowedSigners("dev,staging"), landscapes: []string{"dev", "staging"}},
		{name: "options of allowed_signers are read as git reads them", file: `dev namespaces="git" ` + dev.signer.PublicKey() + "\n", landscapes: []string{"dev"}},
		{name: "a key without a landscape is refused", file: dev.signer.PublicKey() + "\n", err: "line 1:"},
		{name: "a pattern is no landscape", file: dev.allowedSigners("*"), err: `principal "*"`},
		{name: "a person's email is no landscape", file: dev.allowedSigners("ops@example.com"), err: `principal "ops@example.com"`},
		{name: "what git's own reading refuses is refused", file: "dev cert-authority " + dev.signer.PublicKey() + "\n", err: "SSH certificates are not supported"},
		{name: "a file without a key would refuse every record, and is refused", file: "# nothing yet\n", err: "holds no key"},
		{name: "a file over its bound is refused naming the bound", file: strings.Repeat("#", MaxRecordKeysSize+1), err: "more than the 262144 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			keys, err := ParseRecordKeys("keys.txt", []byte(tc.file))
			if tc.err != "" {
				g.Expect(err).To(MatchError(ErrInvalidRecordKey))
				g.Expect(err).To(MatchError(ContainSubstring("keys.txt")))
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(keys.Landscapes()).To(Equal(tc.landscapes))
		})
	}
}

func TestParseRecordSigningKey(t *testing.T) {
	_, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	encrypted, err := ssh.MarshalPrivateKeyWithPassphrase(private, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		err  string
	}{
		{name: "an OpenSSH Ed25519 key signs", data: newTestRecordKey(t, "ed25519").private},
		{name: "an OpenSSH ECDSA key signs", data: newTestRecordKey(t, "ecdsa").private},
		{name: "a key encrypted with a passphrase is refused, saying how to give one", data: pem.EncodeToMemory(encrypted), err: "encrypted with a passphrase"},
		{name: "a public key is no signing key", data: []byte(newTestRecordKey(t, "ed25519").signer.PublicKey()), err: "not an SSH private key"},
		{name: "a key over its bound is refused before it is parsed", data: make([]byte, MaxRecordSigningKeySize+1), err: "more than the 16384 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			signer, err := ParseRecordSigningKey("Secret ns/dev-signing: entry identity", tc.data)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ErrInvalidRecordKey))
				g.Expect(IsTransient(err)).To(BeFalse(), "a key that cannot be used is not pushed with again until the Secret changes")
				g.Expect(err).To(MatchError(ContainSubstring("Secret ns/dev-signing: entry identity")))
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(signer.Fingerprint()).To(HavePrefix("SHA256:"))
		})
	}
}

// TestRecordsMarkEachRecordsSignatureAndAForgedOneDoesNotEndTheReading:
// Records with keys marks every record, and a forged record with an old
// readyAt, newest, does not hide the genuine ones below it.
func TestRecordsMarkEachRecordsSignatureAndAForgedOneDoesNotEndTheReading(t *testing.T) {
	g := NewWithT(t)
	repo := newRecordRepo(t)
	revision := repo.commit("refs/heads/main", map[string][]byte{"profile.yaml": []byte("version: 1\n")})
	dev := newTestRecordKey(t, "ed25519")
	ref := plumbing.ReferenceName(rollout.LandscapeRefPrefix + "dev")
	for _, step := range []struct {
		record rollout.Record
		signer *RecordSigner
	}{
		{appliedRecord("dev", revision, 0), dev.signer},
		{appliedRecord("dev", revision, time.Hour), dev.signer},
		{appliedRecord("dev", revision, -30*24*time.Hour), nil}, // forged: Ready a month before the others, unsigned
	} {
		content, err := rollout.EncodeRecord(step.record)
		g.Expect(err).NotTo(HaveOccurred())
		hash, err := writeRecordCommit(repo.repository, step.record, content, repo.tips[ref], step.signer)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repo.repository.Storer.SetReference(plumbing.NewHashReference(ref, hash))).To(Succeed())
		repo.tips[ref] = hash
	}
	landscapes := repo.landscapes()
	landscapes.CheckRecordSignatures(mustRecordKeys(t, dev.allowedSigners("dev")), recordTime)
	history, err := landscapes.Records("dev", RecordLimits{Since: recordTime.Add(30 * time.Minute)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(history.Records).To(HaveLen(3), "the forged record, then the genuine ones down to the first Ready before the window")
	g.Expect(history.Records[0].Signature.Failure).To(Equal(string(Unsigned)))
	g.Expect(history.Records[1].Signature.Verified).To(BeTrue())
	g.Expect(history.Records[2].Signature.Verified).To(BeTrue())

	unchecked, err := repo.landscapes().Records("dev", RecordLimits{Since: recordTime.Add(30 * time.Minute)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unchecked.Records).To(HaveLen(1), "without keys nothing is checked, and the forged record ends the reading as before")
	g.Expect(unchecked.Records[0].Signature.Checked).To(BeFalse())
}

// FuzzParseRecordKeys: no input makes the parser panic, and every
// landscape it returns keys for is a landscape name, so no key can vouch
// for a ref outside refs/profilesync/landscapes/.
func FuzzParseRecordKeys(f *testing.F) {
	key := newTestRecordKey(f, "ed25519")
	f.Add([]byte(key.allowedSigners("dev")))
	f.Add([]byte(key.allowedSigners("dev,prod")))
	f.Add([]byte(`"dev" namespaces="git" ` + key.signer.PublicKey() + "\n"))
	f.Add([]byte("* " + key.signer.PublicKey() + "\n# comment\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := ParseRecordKeys("fuzz", data)
		if err != nil {
			return
		}
		for _, landscape := range keys.Landscapes() {
			if _, err := rollout.LandscapeRef(landscape); err != nil {
				t.Fatalf("keys for %q, which is no landscape: %v", landscape, err)
			}
		}
	})
}
