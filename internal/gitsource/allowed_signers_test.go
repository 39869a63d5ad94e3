package gitsource

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// newSSHKey makes an SSH signing key of kind "ed25519" or "ecdsa" (P-256).
func newSSHKey(t testing.TB, kind string) ssh.Signer {
	t.Helper()
	signer, err := ssh.NewSignerFromKey(newPrivateKey(t, kind))
	if err != nil {
		t.Fatal(err)
	}
	return signer
}

// newPrivateKey makes a private key of kind "ed25519" or "ecdsa" (P-256),
// the kinds SSH signatures are tested with.
func newPrivateKey(t testing.TB, kind string) crypto.Signer {
	t.Helper()
	var private crypto.Signer
	var err error
	switch kind {
	case "ed25519":
		_, private, err = ed25519.GenerateKey(rand.Reader)
	case "ecdsa":
		private, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		t.Fatalf("no SSH key kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return private
}

// allowedSignersLine is key's line of an allowed_signers file.
func allowedSignersLine(principals, options string, key ssh.Signer) string {
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key.PublicKey())))
	if options != "" {
		return fmt.Sprintf("%s %s %s comment", principals, options, authorized)
	}
	return fmt.Sprintf("%s %s", principals, authorized)
}

// sshSign is the armored SSH signature of payload by key in namespace, as
// `ssh-keygen -Y sign` (and so `git commit -S` with gpg.format=ssh) writes.
func sshSign(t testing.TB, payload []byte, key ssh.Signer, namespace string) string {
	t.Helper()
	signature, err := sshsig.Sign(strings.NewReader(string(payload)), key, sshsig.HashSHA512, namespace)
	if err != nil {
		t.Fatal(err)
	}
	return string(sshsig.Armor(signature))
}

// testSSHCommit is a commit with message signed by key in namespace, as
// read back from its encoding.
func testSSHCommit(t testing.TB, message string, key ssh.Signer, namespace string) *object.Commit {
	t.Helper()
	commit := testCommit(t, message, nil)
	payload, err := withoutSignature(commit.EncodeWithoutSignature)
	if err != nil {
		t.Fatal(err)
	}
	commit.PGPSignature = sshSign(t, payload, key, namespace)
	return readBack(t, commit)
}

func TestVerifySSHCommitSignature(t *testing.T) {
	ed25519Key, ecdsaKey := newSSHKey(t, "ed25519"), newSSHKey(t, "ecdsa")
	expiring, notYet := newSSHKey(t, "ed25519"), newSSHKey(t, "ed25519")
	filesOnly, stranger := newSSHKey(t, "ed25519"), newSSHKey(t, "ed25519")
	allowed := strings.Join([]string{
		"# the release managers",
		allowedSignersLine("prod-owner,alice@example.com", `namespaces="git"`, ed25519Key),
		allowedSignersLine("dev@example.com", "", ecdsaKey),
		allowedSignersLine("leaver", `valid-before="20260101"`, expiring),
		allowedSignersLine("joiner", `valid-after="20270101000000Z"`, notYet),
		allowedSignersLine("files", `namespaces="file"`, filesOnly),
		"",
	}, "\n")
	keys, err := ParseTrustedKeys("Secret ns/keys", map[string][]byte{AllowedSignersFileName: []byte(allowed)})
	if err != nil {
		t.Fatal(err)
	}
	openPGPOnly, err := ParseTrustedKeys("Secret ns/pgp", map[string][]byte{"rsa.asc": armoredPublicKey(t, newTestKey(t, "rsa", packet.PubKeyAlgoRSA, "", 0))})
	if err != nil {
		t.Fatal(err)
	}
	tampered := testSSHCommit(t, "raise the limit\n", ed25519Key, SSHSignatureNamespace)
	tampered.Message = "lower the limit\n"
	tampered = readBack(t, tampered)
	fingerprintOf := func(key ssh.Signer) string { return "SSH key " + ssh.FingerprintSHA256(key.PublicKey()) }

	checkedAt := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		commit  *object.Commit
		keys    TrustedKeys
		failure SignatureFailure // empty: verifies
		signer  string           // a part of the signer named, either way
	}{
		{"a commit signed by a trusted SSH Ed25519 key verifies, naming its principals", testSSHCommit(t, "ed25519\n", ed25519Key, "git"), keys, "", fingerprintOf(ed25519Key) + " (prod-owner, alice@example.com)"},
		{"a commit signed by a trusted SSH ECDSA key verifies", testSSHCommit(t, "ecdsa\n", ecdsaKey, "git"), keys, "", fingerprintOf(ecdsaKey) + " (dev@example.com)"},
		{"a commit signed by an SSH key not listed is refused as an unknown key, naming the key", testSSHCommit(t, "stranger\n", stranger, "git"), keys, UnknownKey, fingerprintOf(stranger)},
		{"an SSH signature is an unknown key when only OpenPGP keys are trusted", testSSHCommit(t, "ssh\n", ed25519Key, "git"), openPGPOnly, UnknownKey, fingerprintOf(ed25519Key)},
		{"a key trusted for other namespaces only is an unknown key for commits", testSSHCommit(t, "files\n", filesOnly, "git"), keys, UnknownKey, fingerprintOf(filesOnly)},
		{"a commit changed after it was SSH-signed is refused as a bad signature", tampered, keys, BadSignature, fingerprintOf(ed25519Key)},
		{"an SSH signature made for another namespace is a bad signature", testSSHCommit(t, "file\n", ed25519Key, "file"), keys, BadSignature, fingerprintOf(ed25519Key)},
		{"an SSH key past its valid-before is refused as an expired key", testSSHCommit(t, "late\n", expiring, "git"), keys, ExpiredKey, fingerprintOf(expiring)},
		{"an SSH key before its valid-after is refused as an expired key", testSSHCommit(t, "early\n", notYet, "git"), keys, ExpiredKey, fingerprintOf(notYet)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signer, err := VerifyCommitSignature(tt.commit, tt.keys, checkedAt)
			if tt.failure == "" {
				if err != nil {
					t.Fatalf("VerifyCommitSignature: %v", err)
				}
				if signer.String() != tt.signer {
					t.Fatalf("signer %q, want %q", signer, tt.signer)
				}
				return
			}
			var failed *VerificationError
			if !errors.As(err, &failed) || !errors.Is(err, ErrVerificationFailed) {
				t.Fatalf("VerifyCommitSignature = %v, want a VerificationError", err)
			}
			if failed.Failure != tt.failure {
				t.Fatalf("failure %q, want %q: %v", failed.Failure, tt.failure, err)
			}
			if !strings.Contains(err.Error(), "commit "+tt.commit.Hash.String()) || !strings.Contains(err.Error(), tt.signer) {
				t.Fatalf("%v does not name commit %s and signer %q", err, tt.commit.Hash, tt.signer)
			}
		})
	}
}

func TestVerifyTagSignature(t *testing.T) {
	key := newSSHKey(t, "ed25519")
	keys, err := ParseTrustedKeys("Secret ns/keys", map[string][]byte{"team.allowed_signers": []byte(allowedSignersLine("releaser", "", key))})
	if err != nil {
		t.Fatal(err)
	}
	who := object.Signature{Name: "Rel", Email: "rel@example.com", When: keysMadeAt}
	tag := &object.Tag{Name: "v1.0.0", Tagger: who, Message: "release\n", TargetType: plumbing.CommitObject, Target: plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")}
	unsigned, err := VerifyTagSignature(tag, keys, keysMadeAt)
	var failed *VerificationError
	if !errors.As(err, &failed) || failed.Failure != Unsigned || !strings.Contains(err.Error(), `tag "v1.0.0"`) {
		t.Fatalf("an unsigned tag = %v, %v; want it refused as unsigned, naming the tag", unsigned, err)
	}
	payload, err := withoutSignature(tag.EncodeWithoutSignature)
	if err != nil {
		t.Fatal(err)
	}
	tag.PGPSignature = sshSign(t, payload, key, SSHSignatureNamespace)
	signer, err := VerifyTagSignature(tag, keys, keysMadeAt)
	if err != nil || !signer.HasPrincipal([]string{"releaser"}) {
		t.Fatalf("a signed tag = %v, %v; want it verified as releaser's", signer, err)
	}
}

func TestParseAllowedSigners(t *testing.T) {
	key := newSSHKey(t, "ed25519")
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key.PublicKey())))
	tests := []struct {
		name string
		line string
		want AllowedSigner // Key is always key
		err  string        // a part of the error; empty: parsed
	}{
		{"principals before a key", "a@example.com,prod-owner " + authorized, AllowedSigner{Principals: []string{"a@example.com", "prod-owner"}}, ""},
		{"quoted principals with options and a comment", `"a b" namespaces="git,file",valid-after="20260102",valid-before="202701020304Z" ` + authorized + " laptop",
			AllowedSigner{Principals: []string{"a b"}, Namespaces: []string{"git", "file"}, ValidAfter: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), ValidBefore: time.Date(2027, 1, 2, 3, 4, 0, 0, time.UTC)}, ""},
		{"a key without principals is refused", authorized, AllowedSigner{}, "not [options] keytype base64-key"},
		{"a certificate authority is refused", "ca cert-authority " + authorized, AllowedSigner{}, "SSH certificates are not supported"},
		{"an unknown option is refused", `a no-touch-required ` + authorized, AllowedSigner{}, `option "no-touch-required"`},
		{"a malformed time is refused", `a valid-before="2026" ` + authorized, AllowedSigner{}, "not YYYYMMDD"},
		{"a negated namespace is refused", `a namespaces="!file" ` + authorized, AllowedSigner{}, "negated namespaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signers, err := ParseAllowedSigners("Secret ns/keys: entry \"allowed_signers\"", []byte("# team\n\n"+tt.line+"\n"))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), `entry "allowed_signers": line 3`) {
					t.Fatalf("ParseAllowedSigners = %v, want an error naming line 3 and %q", err, tt.err)
				}
				return
			}
			if err != nil || len(signers) != 1 {
				t.Fatalf("ParseAllowedSigners = %v, %v", signers, err)
			}
			got := signers[0]
			if got.Key.Type() != key.PublicKey().Type() || fmt.Sprint(got.Principals, got.Namespaces) != fmt.Sprint(tt.want.Principals, tt.want.Namespaces) ||
				!got.ValidAfter.Equal(tt.want.ValidAfter) || !got.ValidBefore.Equal(tt.want.ValidBefore) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// FuzzParseAllowedSigners: no input makes the parser panic, and every line
// it accepts has a key and a principal.
func FuzzParseAllowedSigners(f *testing.F) {
	key := newSSHKey(f, "ecdsa")
	f.Add([]byte(allowedSignersLine("a,b", `namespaces="git",valid-before="20260101"`, key)))
	f.Add([]byte(`"x y" ` + allowedSignersLine("", "", key)))
	f.Fuzz(func(t *testing.T, data []byte) {
		signers, err := ParseAllowedSigners("fuzz", data)
		if err != nil {
			return
		}
		for _, signer := range signers {
			if signer.Key == nil || len(signer.Principals) == 0 {
				t.Fatalf("accepted a signer without key or principal: %+v", signer)
			}
		}
	})
}
