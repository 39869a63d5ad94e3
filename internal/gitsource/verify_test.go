package gitsource

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// keysMadeAt is when the test's keys are made; commits are signed a minute
// later and checked an hour later.
var keysMadeAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newTestKey makes an OpenPGP key pair of algorithm (and curve) at
// keysMadeAt, valid for lifetime (zero: for ever).
func newTestKey(t testing.TB, name string, algorithm packet.PublicKeyAlgorithm, curve packet.Curve, lifetime time.Duration) *openpgp.Entity {
	t.Helper()
	entity, err := openpgp.NewEntity(name, "", name+"@example.com", &packet.Config{
		Algorithm:       algorithm,
		Curve:           curve,
		RSABits:         2048,
		Time:            func() time.Time { return keysMadeAt },
		KeyLifetimeSecs: uint32(lifetime / time.Second),
	})
	if err != nil {
		t.Fatalf("make %s key: %v", name, err)
	}
	return entity
}

// armoredPublicKey is entity's public key as `gpg --export --armor` writes it.
func armoredPublicKey(t testing.TB, entity *openpgp.Entity) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := armor.Encode(&out, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := entity.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out.WriteString("\n") // gpg ends the file with a newline; armor.Encode does not
	return out.Bytes()
}

// testCommit is a commit with message, signed by signer a minute after
// keysMadeAt (unsigned without one), as read back from its encoding.
func testCommit(t testing.TB, message string, signer *openpgp.Entity) *object.Commit {
	t.Helper()
	who := object.Signature{Name: "Dev", Email: "dev@example.com", When: keysMadeAt.Add(time.Minute)}
	commit := &object.Commit{Author: who, Committer: who, Message: message, TreeHash: plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")}
	if signer != nil {
		payload := &plumbing.MemoryObject{}
		if err := commit.EncodeWithoutSignature(payload); err != nil {
			t.Fatal(err)
		}
		reader, err := payload.Reader()
		if err != nil {
			t.Fatal(err)
		}
		var signature strings.Builder
		if err := openpgp.ArmoredDetachSign(&signature, signer, reader, &packet.Config{Time: func() time.Time { return who.When }}); err != nil {
			t.Fatal(err)
		}
		commit.PGPSignature = signature.String()
	}
	return readBack(t, commit)
}

// readBack is commit encoded and decoded again, as a repository holds it.
func readBack(t testing.TB, commit *object.Commit) *object.Commit {
	t.Helper()
	encoded := &plumbing.MemoryObject{}
	if err := commit.Encode(encoded); err != nil {
		t.Fatal(err)
	}
	var decoded object.Commit
	if err := decoded.Decode(encoded); err != nil {
		t.Fatal(err)
	}
	return &decoded
}

func TestVerifyCommitSignature(t *testing.T) {
	rsaKey := newTestKey(t, "rsa", packet.PubKeyAlgoRSA, "", 0)
	ecdsaKey := newTestKey(t, "ecdsa", packet.PubKeyAlgoECDSA, packet.CurveNistP256, 0)
	ed25519Key := newTestKey(t, "ed25519", packet.PubKeyAlgoEdDSA, packet.Curve25519, 0)
	expiring := newTestKey(t, "expiring", packet.PubKeyAlgoEdDSA, packet.Curve25519, time.Hour)
	stranger := newTestKey(t, "stranger", packet.PubKeyAlgoEdDSA, packet.Curve25519, 0)

	keys, err := ParseTrustedKeys("Secret ns/keys", map[string][]byte{
		"rsa.asc":   armoredPublicKey(t, rsaKey),
		"ecdsa.asc": armoredPublicKey(t, ecdsaKey),
		"team.asc": append( // two files concatenated
			armoredPublicKey(t, ed25519Key), armoredPublicKey(t, expiring)...),
		"ignored.asc": armoredPublicKey(t, ed25519Key),
	})
	if err != nil {
		t.Fatal(err)
	}

	tampered := testCommit(t, "raise the limit\n", rsaKey)
	tampered.Message = "lower the limit\n"
	tampered = readBack(t, tampered)

	sshSigned := testSSHCommit(t, "signed with ssh\n", newSSHKey(t, "ed25519"), SSHSignatureNamespace)

	checkedAt := keysMadeAt.Add(time.Hour - time.Minute)
	tests := []struct {
		name    string
		commit  *object.Commit
		at      time.Time
		failure SignatureFailure // empty: verifies
		signer  string           // a part of the signer named, either way
	}{
		{"a commit signed by a trusted RSA key verifies", testCommit(t, "rsa\n", rsaKey), checkedAt, "", fingerprint(rsaKey.PrimaryKey.Fingerprint)},
		{"a commit signed by a trusted ECDSA key verifies", testCommit(t, "ecdsa\n", ecdsaKey), checkedAt, "", "ecdsa <ecdsa@example.com>"},
		{"a commit signed by a trusted Ed25519 key verifies", testCommit(t, "ed25519\n", ed25519Key), checkedAt, "", fingerprint(ed25519Key.PrimaryKey.Fingerprint)},
		{"a commit signed by a key before it expires verifies", testCommit(t, "in time\n", expiring), checkedAt, "", "expiring"},
		{"an unsigned commit is refused as unsigned", testCommit(t, "unsigned\n", nil), checkedAt, Unsigned, ""},
		{"a commit signed by a key not trusted is refused as an unknown key, naming the key", testCommit(t, "stranger\n", stranger), checkedAt, UnknownKey, fingerprint(stranger.PrimaryKey.Fingerprint)},
		{"a commit changed after it was signed is refused as a bad signature", tampered, checkedAt, BadSignature, fingerprint(rsaKey.PrimaryKey.Fingerprint)},
		{"a commit signed by a key expired at the time of the check is refused as an expired key", testCommit(t, "too late\n", expiring), keysMadeAt.Add(2 * time.Hour), ExpiredKey, fingerprint(expiring.PrimaryKey.Fingerprint)},
		{"an SSH signature is an unknown key when only OpenPGP keys are trusted", sshSigned, checkedAt, UnknownKey, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signer, err := VerifyCommitSignature(tt.commit, keys, tt.at)
			if tt.failure == "" {
				if err != nil {
					t.Fatalf("VerifyCommitSignature: %v", err)
				}
				if !strings.Contains(signer.String(), tt.signer) {
					t.Fatalf("signer %q does not name %q", signer, tt.signer)
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
			if failed.Commit != tt.commit.Hash.String() || !strings.Contains(err.Error(), tt.commit.Hash.String()) {
				t.Fatalf("%v does not name commit %s", err, tt.commit.Hash)
			}
			if !strings.Contains(failed.Signer, tt.signer) || !strings.Contains(err.Error(), tt.signer) {
				t.Fatalf("%v does not name the signer %q", err, tt.signer)
			}
		})
	}
}

func TestParseTrustedKeys(t *testing.T) {
	key := newTestKey(t, "dev", packet.PubKeyAlgoEdDSA, packet.Curve25519, 0)
	var private bytes.Buffer
	w, err := armor.Encode(&private, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := key.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()

	tests := []struct {
		name string
		data map[string][]byte
		want string // a part of the error; empty: parsed
	}{
		{"armored public keys in entries ending in .asc are trusted", map[string][]byte{"dev.asc": armoredPublicKey(t, key)}, ""},
		{"an entry of another name is refused, named", map[string][]byte{"dev.asc": armoredPublicKey(t, key), "dev.gpg": armoredPublicKey(t, key)}, `entry "dev.gpg"`},
		{"an entry that is no armored key is refused, named", map[string][]byte{"broken.asc": []byte("not a key")}, `entry "broken.asc": not armored OpenPGP public keys`},
		{"a private key is refused", map[string][]byte{"dev.asc": private.Bytes()}, "holds the private key " + fingerprint(key.PrimaryKey.Fingerprint)},
		{"a Secret without keys is refused", map[string][]byte{}, "holds no key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := ParseTrustedKeys("Secret ns/keys", tt.data)
			if tt.want == "" {
				if err != nil || keys.Len() != 1 {
					t.Fatalf("ParseTrustedKeys = %d keys, %v; want 1 key", keys.Len(), err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidTrustedKeys) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "Secret ns/keys") {
				t.Fatalf("ParseTrustedKeys error %v, want ErrInvalidTrustedKeys naming the Secret and %q", err, tt.want)
			}
		})
	}
}

// TestVerifyCommitReadsTheCommitOfARepository: VerifyCommit reads the
// commit from a repository, within the object limits, and verifies it.
func TestVerifyCommitReadsTheCommitOfARepository(t *testing.T) {
	r := newExportRepo(t)
	commit := r.commit(map[string]string{"a.yaml": "a: 1\n"})
	key := newTestKey(t, "dev", packet.PubKeyAlgoEdDSA, packet.Curve25519, 0)
	keys, err := ParseTrustedKeys("Secret ns/keys", map[string][]byte{"dev.asc": armoredPublicKey(t, key)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifyCommit(r.dir, commit, keys, keysMadeAt, ObjectLimitsFor(0))
	var failed *VerificationError
	if !errors.As(err, &failed) || failed.Failure != Unsigned || failed.Commit != commit {
		t.Fatalf("VerifyCommit of the unsigned commit %s = %v, want it refused as unsigned", commit, err)
	}
	if _, err := VerifyCommit(r.dir, "0123456789012345678901234567890123456789", keys, keysMadeAt, ObjectLimitsFor(0)); err == nil || errors.Is(err, ErrVerificationFailed) {
		t.Fatalf("a commit the repository lacks is an error reading it, not a verdict: %v", err)
	}
}

// BenchmarkVerifyCommitSignature is the cost of verifying one revision's
// commit, once the keys are parsed: what spec.verify adds to a sync in mode
// HEAD, for each kind of key.
func BenchmarkVerifyCommitSignature(b *testing.B) {
	for _, kind := range []struct {
		name      string
		algorithm packet.PublicKeyAlgorithm
		curve     packet.Curve
	}{
		{"OpenPGP-RSA-2048", packet.PubKeyAlgoRSA, ""},
		{"OpenPGP-ECDSA-P256", packet.PubKeyAlgoECDSA, packet.CurveNistP256},
		{"OpenPGP-Ed25519", packet.PubKeyAlgoEdDSA, packet.Curve25519},
	} {
		b.Run(kind.name, func(b *testing.B) {
			key := newTestKey(b, kind.name, kind.algorithm, kind.curve, 0)
			keys, err := ParseTrustedKeys("bench", map[string][]byte{"k.asc": armoredPublicKey(b, key)})
			if err != nil {
				b.Fatal(err)
			}
			benchmarkVerify(b, testCommit(b, "bench\n", key), keys, keysMadeAt.Add(time.Hour))
		})
	}
	for _, kind := range []string{"ed25519", "ecdsa"} {
		b.Run("SSH-"+kind, func(b *testing.B) {
			key := newSSHKey(b, kind)
			keys, err := ParseTrustedKeys("bench", map[string][]byte{AllowedSignersFileName: []byte(allowedSignersLine("dev", "", key))})
			if err != nil {
				b.Fatal(err)
			}
			benchmarkVerify(b, testSSHCommit(b, "bench\n", key, SSHSignatureNamespace), keys, keysMadeAt.Add(time.Hour))
		})
	}
}

func benchmarkVerify(b *testing.B, commit *object.Commit, keys TrustedKeys, at time.Time) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := VerifyCommitSignature(commit, keys, at); err != nil {
			b.Fatal(err)
		}
	}
}
