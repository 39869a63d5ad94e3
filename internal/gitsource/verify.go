package gitsource

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrVerificationFailed is wrapped by every VerificationError: the
// revision's commit is not signed by a key its ProfileSync trusts.
var ErrVerificationFailed = errors.New("signature verification failed")

// ErrInvalidTrustedKeys: the Secret of trusted keys cannot be read as
// OpenPGP public keys; ParseTrustedKeys's error names the entry.
var ErrInvalidTrustedKeys = errors.New("invalid trusted keys")

// TrustedKeyFileSuffix ends the name of every entry of a trusted keys
// Secret: each holds one or more armored OpenPGP public keys (what
// `gpg --export --armor` writes). The suffix leaves room for other kinds of
// keys (SSH's allowed_signers) in the same Secret.
const TrustedKeyFileSuffix = ".asc"

// TrustedKeys are the OpenPGP public keys whose signatures a ProfileSync
// accepts (spec.verify.secretRef).
type TrustedKeys struct {
	keyring openpgp.EntityList
}

// Len is the number of keys (entities) trusted.
func (k TrustedKeys) Len() int { return len(k.keyring) }

// ParseTrustedKeys reads the armored OpenPGP public keys of a Secret's data;
// source names the Secret in errors. Every entry must end in
// TrustedKeyFileSuffix and hold at least one public key; an entry that does
// not is an error naming it, not a key silently left out (which would only
// show later as every commit's "unknown key"). No key at all is an error
// too: it would refuse every revision.
func ParseTrustedKeys(source string, data map[string][]byte) (TrustedKeys, error) {
	names := make([]string, 0, len(data))
	for name := range data {
		names = append(names, name)
	}
	sort.Strings(names)
	var keys TrustedKeys
	for _, name := range names {
		if !strings.HasSuffix(name, TrustedKeyFileSuffix) {
			return TrustedKeys{}, fmt.Errorf("%w: %s: entry %q: the names of OpenPGP key entries end in %q", ErrInvalidTrustedKeys, source, name, TrustedKeyFileSuffix)
		}
		entities, err := readArmoredKeys(data[name])
		if err != nil {
			return TrustedKeys{}, fmt.Errorf("%w: %s: entry %q: not armored OpenPGP public keys: %w", ErrInvalidTrustedKeys, source, name, err)
		}
		for _, entity := range entities {
			if entity.PrivateKey != nil {
				// A private key in a Secret every reader of it sees is a
				// leaked signing key: refused, so it is noticed.
				return TrustedKeys{}, fmt.Errorf("%w: %s: entry %q: holds the private key %s; trust only public keys (gpg --export --armor)",
					ErrInvalidTrustedKeys, source, name, fingerprint(entity.PrimaryKey.Fingerprint))
			}
		}
		keys.keyring = append(keys.keyring, entities...)
	}
	if len(keys.keyring) == 0 {
		return TrustedKeys{}, fmt.Errorf("%w: %s holds no OpenPGP public key (entries ending in %q)", ErrInvalidTrustedKeys, source, TrustedKeyFileSuffix)
	}
	return keys, nil
}

// readArmoredKeys reads every armored block of data, one after another as
// files of keys concatenated hold them, each of one or more keys.
func readArmoredKeys(data []byte) (openpgp.EntityList, error) {
	// armor.Decode reads on from where the block before ended when given
	// the same buffered reader.
	in := bufio.NewReader(bytes.NewReader(data))
	var keys openpgp.EntityList
	for {
		block, err := armor.Decode(in)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if block.Type != openpgp.PublicKeyType && block.Type != openpgp.PrivateKeyType {
			return nil, fmt.Errorf("an armored %q, not a key", block.Type)
		}
		entities, err := openpgp.ReadKeyRing(block.Body)
		if err != nil {
			return nil, err
		}
		keys = append(keys, entities...)
	}
	if len(keys) == 0 {
		return nil, errors.New("no armored key block")
	}
	return keys, nil
}

// SignatureFailure is why a commit's signature does not verify.
type SignatureFailure string

// The failures of VerifyCommitSignature.
const (
	// Unsigned: the commit carries no signature.
	Unsigned SignatureFailure = "unsigned"
	// UnknownKey: the commit is signed by a key that is not trusted, or by a
	// kind of signature no trusted key can check (SSH).
	UnknownKey SignatureFailure = "unknown key"
	// BadSignature: the signature does not match the commit (it was changed
	// after signing), is malformed, or its key is revoked.
	BadSignature SignatureFailure = "bad signature"
	// ExpiredKey: the trusted key, or the signature, has expired at the
	// time of the check.
	ExpiredKey SignatureFailure = "expired key"
)

// VerificationError is a commit whose signature does not verify: which
// commit, the key its signature names (empty when unsigned), and why.
type VerificationError struct {
	Commit  string
	Signer  string
	Failure SignatureFailure
	// Detail is what the check found, in a few words.
	Detail string
}

func (e *VerificationError) Error() string {
	signer := e.Signer
	if signer == "" {
		signer = "none"
	}
	return fmt.Sprintf("commit %s: %s: signed by %s: %s", e.Commit, e.Failure, signer, e.Detail)
}

// Is makes errors.Is(err, ErrVerificationFailed) true.
func (e *VerificationError) Is(target error) bool { return target == ErrVerificationFailed }

// VerifyCommit reads commit (a full SHA-1) from the repository at repoDir,
// a fetch's Result.Dir included, within limits like every object
// (ObjectLimitsFor), and verifies its signature against keys at now
// (VerifyCommitSignature). It returns the signer on success.
func VerifyCommit(repoDir, commit string, keys TrustedKeys, now time.Time, limits ObjectLimits) (string, error) {
	repository, storage, err := openLocalRepository(repoDir, limits)
	if err != nil {
		return "", err
	}
	defer storage.Close()
	read, err := repository.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return "", fmt.Errorf("read commit %s of %s: %w", commit, repoDir, err)
	}
	return VerifyCommitSignature(read, keys, now)
}

// VerifyCommitSignature checks that commit carries one OpenPGP signature,
// made over the commit as it is by a key of keys that is neither expired
// nor revoked at now. It returns the signer (the key's fingerprint and
// primary identity); otherwise a *VerificationError. The cryptography is
// ProtonMail/go-crypto's, the bytes signed go-git's
// (EncodeWithoutSignature): the same check as go-git's Commit.Verify, with
// the time given rather than read.
func VerifyCommitSignature(commit *object.Commit, keys TrustedKeys, now time.Time) (string, error) {
	failed := func(failure SignatureFailure, signer, detail string) error {
		return &VerificationError{Commit: commit.Hash.String(), Signer: signer, Failure: failure, Detail: detail}
	}
	if strings.TrimSpace(commit.PGPSignature) == "" {
		return "", failed(Unsigned, "", "the commit carries no signature")
	}
	block, err := armor.Decode(strings.NewReader(commit.PGPSignature))
	if err != nil {
		return "", failed(BadSignature, "", fmt.Sprintf("the signature is not armored OpenPGP: %v", err))
	}
	if block.Type != openpgp.SignatureType {
		// An SSH (or X.509) signature: no key of ours can check it.
		return "", failed(UnknownKey, "", fmt.Sprintf("a %q, and only OpenPGP keys are trusted", block.Type))
	}
	raw, err := io.ReadAll(block.Body)
	if err != nil {
		return "", failed(BadSignature, "", fmt.Sprintf("the signature does not decode: %v", err))
	}
	signature, err := onlySignature(raw)
	if err != nil {
		return "", failed(BadSignature, "", err.Error())
	}
	signer := issuerOf(signature)
	if signature.IssuerKeyId == nil || len(keys.keyring.KeysByIdUsage(*signature.IssuerKeyId, packet.KeyFlagSign)) == 0 {
		return "", failed(UnknownKey, signer, "no trusted key made it")
	}
	signed := &plumbing.MemoryObject{}
	if err := commit.EncodeWithoutSignature(signed); err != nil {
		return "", fmt.Errorf("encode commit %s without its signature: %w", commit.Hash, err)
	}
	content, err := signed.Reader()
	if err != nil {
		return "", fmt.Errorf("read commit %s without its signature: %w", commit.Hash, err)
	}
	defer content.Close()
	config := &packet.Config{Time: func() time.Time { return now }}
	_, entity, err := openpgp.VerifyDetachedSignature(keys.keyring, content, bytes.NewReader(raw), config)
	if entity != nil {
		signer = signerOf(entity)
	}
	switch {
	case err == nil:
		return signer, nil
	case errors.Is(err, pgperrors.ErrKeyExpired):
		return "", failed(ExpiredKey, signer, fmt.Sprintf("the key expired before %s", now.UTC().Format(time.RFC3339)))
	case errors.Is(err, pgperrors.ErrSignatureExpired):
		return "", failed(ExpiredKey, signer, fmt.Sprintf("the signature, or the key's self-signature, expired before %s", now.UTC().Format(time.RFC3339)))
	case errors.Is(err, pgperrors.ErrKeyRevoked):
		return "", failed(BadSignature, signer, "the key is revoked")
	default:
		return "", failed(BadSignature, signer, fmt.Sprintf("the signature does not match the commit: %v", err))
	}
}

// onlySignature is the one signature packet of raw. More than one is
// refused, as go-git and git refuse a commit with several signatures:
// which one counted would be ambiguous.
func onlySignature(raw []byte) (*packet.Signature, error) {
	packets := packet.NewReader(bytes.NewReader(raw))
	var found *packet.Signature
	for {
		p, err := packets.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the signature does not decode: %w", err)
		}
		signature, ok := p.(*packet.Signature)
		if !ok {
			return nil, fmt.Errorf("the signature holds a %T, not only a signature", p)
		}
		if found != nil {
			return nil, errors.New("the commit carries more than one signature")
		}
		found = signature
	}
	if found == nil {
		return nil, errors.New("the signature block holds no signature")
	}
	return found, nil
}

// issuerOf names the key a signature says made it: its fingerprint when
// the signature carries one, else its 64-bit key ID.
func issuerOf(signature *packet.Signature) string {
	switch {
	case len(signature.IssuerFingerprint) > 0:
		return "OpenPGP key " + fingerprint(signature.IssuerFingerprint)
	case signature.IssuerKeyId != nil:
		return fmt.Sprintf("OpenPGP key ID %016X", *signature.IssuerKeyId)
	default:
		return "an OpenPGP signature naming no key"
	}
}

// signerOf names a trusted key: its primary key's fingerprint and primary
// identity.
func signerOf(entity *openpgp.Entity) string {
	name := "OpenPGP key " + fingerprint(entity.PrimaryKey.Fingerprint)
	if identity := entity.PrimaryIdentity(); identity != nil {
		name += fmt.Sprintf(" (%s)", identity.Name)
	}
	return name
}

func fingerprint(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }
