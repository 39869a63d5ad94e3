package gitsource

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/profilesync/profilesync/internal/rollout"
)

// Signed records (docs/rollout.md#signed-records): a landscape signs each
// record commit it writes with an SSH key, as git signs a commit with
// gpg.format=ssh (an SSH signature of namespace "git" in the commit's
// gpgsig header, over the commit without it), so `git verify-commit` with
// an allowed_signers file checks a record too. A downstream landscape given
// its upstreams' public keys marks each record it reads verified or not
// (rollout.RecordSignature); the decision then ignores the ones that are
// not. The cryptography is hiddeco/sshsig's and golang.org/x/crypto/ssh's.

// MaxRecordSigningKeySize bounds the private key of a Secret that signs
// records: an OpenSSH Ed25519 key is about 400 bytes, a 4096-bit RSA one
// about 3.4 KiB.
const MaxRecordSigningKeySize = 16 << 10

// MaxRecordKeysSize bounds a file of upstream record keys (an
// allowed_signers file): a few hundred bytes per key.
const MaxRecordKeysSize = 256 << 10

// ErrInvalidRecordKey marks a signing key or a file of record keys that
// cannot be used; the error names the source and the line or field.
var ErrInvalidRecordKey = errors.New("invalid record key")

// RecordSigner signs the record commits a landscape writes.
type RecordSigner struct {
	signer ssh.Signer
}

// Fingerprint names the key, as ssh-keygen -l does (SHA256:...).
func (s *RecordSigner) Fingerprint() string { return ssh.FingerprintSHA256(s.signer.PublicKey()) }

// PublicKey is the key's public half in authorized_keys form, the line to
// give downstream landscapes (prefixed with the landscape's name, as
// allowed_signers lines name their principal).
func (s *RecordSigner) PublicKey() string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.signer.PublicKey())))
}

// ParseRecordSigningKey reads an unencrypted SSH private key (OpenSSH or
// PEM, what ssh-keygen writes) of at most MaxRecordSigningKeySize bytes;
// source names where it came from in errors.
func ParseRecordSigningKey(source string, data []byte) (*RecordSigner, error) {
	if len(data) > MaxRecordSigningKeySize {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than the %d bytes of a private key", ErrInvalidRecordKey, source, len(data), MaxRecordSigningKeySize)
	}
	signer, err := ssh.ParsePrivateKey(data)
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		return nil, fmt.Errorf("%w: %s: the private key is encrypted with a passphrase; give an unencrypted key (ssh-keygen -p -N '')", ErrInvalidRecordKey, source)
	case err != nil:
		return nil, fmt.Errorf("%w: %s: not an SSH private key: %w", ErrInvalidRecordKey, source, err)
	}
	return &RecordSigner{signer: signer}, nil
}

// signCommit signs commit as git does for gpg.format=ssh: an armored SSH
// signature of namespace git over the commit encoded without a signature,
// in its gpgsig header (object.Commit.PGPSignature holds that header
// whatever the format).
func (s *RecordSigner) signCommit(commit *object.Commit) error {
	payload := &plumbing.MemoryObject{}
	if err := commit.EncodeWithoutSignature(payload); err != nil {
		return err
	}
	reader, err := payload.Reader()
	if err != nil {
		return err
	}
	defer reader.Close()
	signature, err := sshsig.Sign(reader, s.signer, sshsig.HashSHA512, SSHSignatureNamespace)
	if err != nil {
		return fmt.Errorf("sign with SSH key %s: %w", s.Fingerprint(), err)
	}
	commit.PGPSignature = string(sshsig.Armor(signature))
	return nil
}

// RecordKeys are the SSH public keys whose signatures each landscape's
// records must carry: an allowed_signers file (ParseAllowedSigners, the
// file `git verify-commit` reads) whose principals are landscape names.
type RecordKeys struct {
	byLandscape map[string]AllowedSigners
}

// Landscapes lists the landscapes that have keys, sorted.
func (k RecordKeys) Landscapes() []string {
	names := make([]string, 0, len(k.byLandscape))
	for name := range k.byLandscape {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// ParseRecordKeys reads an allowed_signers file (ssh-keygen(1), "ALLOWED
// SIGNERS"; ParseAllowedSigners) whose principals are landscape names:
// each line
//
//	dev ssh-ed25519 AAAAC3Nza... dev's operator
//	dev,staging namespaces="git" ecdsa-sha2-nistp256 AAAAE2Vj...
//
// gives a key whose signature the records of those landscapes carry.
// A principal that is no landscape name (a pattern like "*", an email) is
// refused: a key meant for one landscape must never vouch for another, nor
// be taken for a person's. source names the file in errors, each error its
// line.
func ParseRecordKeys(source string, data []byte) (RecordKeys, error) {
	if len(data) > MaxRecordKeysSize {
		return RecordKeys{}, fmt.Errorf("%w: %s is %d bytes, more than the %d bytes a file of record keys may have", ErrInvalidRecordKey, source, len(data), MaxRecordKeysSize)
	}
	signers, err := ParseAllowedSigners(source, data)
	if err != nil {
		return RecordKeys{}, fmt.Errorf("%w: %w", ErrInvalidRecordKey, err)
	}
	keys := RecordKeys{byLandscape: map[string]AllowedSigners{}}
	for _, signer := range signers {
		for _, principal := range signer.Principals {
			if _, err := rollout.LandscapeRef(principal); err != nil {
				return RecordKeys{}, fmt.Errorf("%w: %s: key %s: principal %q: a principal names a landscape of the rollout file: %w",
					ErrInvalidRecordKey, source, ssh.FingerprintSHA256(signer.Key), principal, err)
			}
			keys.byLandscape[principal] = append(keys.byLandscape[principal], signer)
		}
	}
	if len(keys.byLandscape) == 0 {
		return RecordKeys{}, fmt.Errorf("%w: %s holds no key: each line names a landscape and its SSH public key (dev ssh-ed25519 AAAA...)", ErrInvalidRecordKey, source)
	}
	return keys, nil
}

// VerifyRecordSignature checks the SSH signature of a record commit of
// landscape against the keys given for that landscape, at now (an
// allowed_signers line's valid-after and valid-before), with the check
// every signed commit gets (VerifySSHSignature).
func VerifyRecordSignature(commit *object.Commit, landscape string, keys RecordKeys, now time.Time) rollout.RecordSignature {
	result := rollout.RecordSignature{Checked: true}
	if strings.Contains(commit.PGPSignature, "BEGIN PGP SIGNATURE") {
		result.Failure, result.Detail = string(UnknownKey), "an OpenPGP signature; records are signed with SSH keys"
		return result
	}
	payload, err := withoutSignature(commit.EncodeWithoutSignature)
	if err != nil {
		result.Failure, result.Detail = string(BadSignature), fmt.Sprintf("the commit does not encode: %v", err)
		return result
	}
	signers := keys.byLandscape[landscape]
	signer, err := VerifySSHSignature(payload, commit.PGPSignature, signers, now)
	var refused *VerificationError
	switch {
	case err == nil:
		result.Verified, result.Signer = true, signer.String()
	case errors.As(err, &refused):
		result.Failure, result.Signer, result.Detail = string(refused.Failure), refused.Signer, refused.Detail
		if refused.Failure == UnknownKey && len(signers) == 0 {
			result.Detail = "no key is given for landscape " + landscape
		}
	default:
		result.Failure, result.Detail = string(BadSignature), err.Error()
	}
	return result
}
