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
// OpenPGP public keys and SSH allowed signers; ParseTrustedKeys's error
// names the entry.
var ErrInvalidTrustedKeys = errors.New("invalid trusted keys")

// TrustedKeyFileSuffix ends the name of every OpenPGP entry of a trusted
// keys Secret: each holds one or more armored OpenPGP public keys (what
// `gpg --export --armor` writes). SSH keys are in entries named
// allowed_signers or ending in .allowed_signers (AllowedSignersFileName).
const TrustedKeyFileSuffix = ".asc"

// TrustedKeys are the OpenPGP public keys and SSH allowed signers whose
// signatures a ProfileSync accepts (spec.verify.secretRef).
type TrustedKeys struct {
	keyring        openpgp.EntityList
	allowedSigners AllowedSigners
}

// Len is the number of keys trusted: OpenPGP entities and allowed_signers
// lines.
func (k TrustedKeys) Len() int { return len(k.keyring) + len(k.allowedSigners) }

// ParseTrustedKeys reads the armored OpenPGP public keys and the SSH
// allowed signers of a Secret's data; source names the Secret (or the
// files) in errors. Every entry must end in TrustedKeyFileSuffix and hold
// at least one OpenPGP public key, or be an allowed_signers entry
// (AllowedSignersFileName) of at least one key; an entry that does
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
		if isAllowedSignersEntry(name) {
			signers, err := ParseAllowedSigners(fmt.Sprintf("%s: entry %q", source, name), data[name])
			if err != nil {
				return TrustedKeys{}, fmt.Errorf("%w: %w", ErrInvalidTrustedKeys, err)
			}
			if len(signers) == 0 {
				return TrustedKeys{}, fmt.Errorf("%w: %s: entry %q: lists no key", ErrInvalidTrustedKeys, source, name)
			}
			keys.allowedSigners = append(keys.allowedSigners, signers...)
			continue
		}
		if !strings.HasSuffix(name, TrustedKeyFileSuffix) {
			return TrustedKeys{}, fmt.Errorf("%w: %s: entry %q: the names of OpenPGP key entries end in %q, and SSH keys are in an entry named %s or ending in %q",
				ErrInvalidTrustedKeys, source, name, TrustedKeyFileSuffix, AllowedSignersFileName, AllowedSignersFileSuffix)
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
	if keys.Len() == 0 {
		return TrustedKeys{}, fmt.Errorf("%w: %s holds no key: no OpenPGP public key (entries ending in %q) and no allowed_signers entry", ErrInvalidTrustedKeys, source, TrustedKeyFileSuffix)
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
	// kind of signature no trusted key can check.
	UnknownKey SignatureFailure = "unknown key"
	// BadSignature: the signature does not match the commit (it was changed
	// after signing), is malformed, or its key is revoked.
	BadSignature SignatureFailure = "bad signature"
	// ExpiredKey: the trusted key, or the signature, has expired at the
	// time of the check (an SSH key: outside valid-after and valid-before).
	ExpiredKey SignatureFailure = "expired key"
)

// commitObjectName names a commit in verdicts and refusals; noneName
// stands for a signer or principals not there.
const (
	commitObjectName = "commit"
	noneName         = "none"
)

// VerificationError is a commit (or tag) whose signature does not verify:
// which object, the key its signature names (empty when unsigned), and why.
type VerificationError struct {
	// Object is what was signed: "commit" (when empty) or "tag".
	Object string
	// Commit is the hash of the object signed (the tag object's for a tag).
	Commit  string
	Signer  string
	Failure SignatureFailure
	// Detail is what the check found, in a few words.
	Detail string
}

func (e *VerificationError) Error() string {
	signer := e.Signer
	if signer == "" {
		signer = noneName
	}
	signed := e.Object
	if signed == "" {
		signed = commitObjectName
	}
	if e.Commit == "" {
		return fmt.Sprintf("%s: signed by %s: %s", e.Failure, signer, e.Detail)
	}
	return fmt.Sprintf("%s %s: %s: signed by %s: %s", signed, e.Commit, e.Failure, signer, e.Detail)
}

// Is makes errors.Is(err, ErrVerificationFailed) true.
func (e *VerificationError) Is(target error) bool { return target == ErrVerificationFailed }

// VerifyCommit reads commit (a full SHA-1) from the repository at repoDir,
// a fetch's Result.Dir included, within limits like every object
// (ObjectLimitsFor), and verifies its signature against keys at now
// (VerifyCommitSignature). It returns the signer on success.
func VerifyCommit(repoDir, commit string, keys TrustedKeys, now time.Time, limits ObjectLimits) (Signer, error) {
	repository, storage, err := openLocalRepository(repoDir, limits)
	if err != nil {
		return Signer{}, err
	}
	defer storage.Close()
	read, err := repository.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return Signer{}, fmt.Errorf("read commit %s of %s: %w", commit, repoDir, err)
	}
	return VerifyCommitSignature(read, keys, now)
}

// VerifyCommitSignature checks that commit carries one signature, OpenPGP
// or SSH, made over the commit as it is by a key of keys that is trusted at
// now (VerifySignature). It returns the signer; otherwise a
// *VerificationError naming the commit. The bytes signed are go-git's
// (EncodeWithoutSignature), as in go-git's Commit.Verify.
func VerifyCommitSignature(commit *object.Commit, keys TrustedKeys, now time.Time) (Signer, error) {
	payload, err := withoutSignature(commit.EncodeWithoutSignature)
	if err != nil {
		return Signer{}, fmt.Errorf("encode commit %s without its signature: %w", commit.Hash, err)
	}
	signer, err := VerifySignature(payload, commit.PGPSignature, keys, now)
	var failed *VerificationError
	if errors.As(err, &failed) {
		failed.Object, failed.Commit = commitObjectName, commit.Hash.String()
		if failed.Failure == Unsigned {
			failed.Detail = "the commit carries no signature"
		}
	}
	return signer, err
}

// VerifyTagSignature checks an annotated tag's own signature (`git tag -s`)
// as VerifyCommitSignature checks a commit's; a refusal names the tag
// object.
func VerifyTagSignature(tag *object.Tag, keys TrustedKeys, now time.Time) (Signer, error) {
	payload, err := withoutSignature(tag.EncodeWithoutSignature)
	if err != nil {
		return Signer{}, fmt.Errorf("encode tag %s without its signature: %w", tag.Hash, err)
	}
	signer, err := VerifySignature(payload, tag.PGPSignature, keys, now)
	var failed *VerificationError
	if errors.As(err, &failed) {
		failed.Object, failed.Commit = fmt.Sprintf("tag %q", tag.Name), tag.Hash.String()
		if failed.Failure == Unsigned {
			failed.Detail = "the annotated tag carries no signature"
		}
	}
	return signer, err
}

// withoutSignature is what encode (a commit's or tag's
// EncodeWithoutSignature) writes: the bytes its signature is over.
func withoutSignature(encode func(plumbing.EncodedObject) error) ([]byte, error) {
	signed := &plumbing.MemoryObject{}
	if err := encode(signed); err != nil {
		return nil, err
	}
	reader, err := signed.Reader()
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	return io.ReadAll(reader)
}

// VerifySignature checks that signature, the armored block of a gpgsig
// header, is one signature over payload by a key of keys trusted at now:
// an SSH signature (-----BEGIN SSH SIGNATURE-----) against the allowed
// signers (VerifySSHSignature), anything else as OpenPGP against the
// keyring, the key neither expired nor revoked at now. It returns the
// signer; otherwise a *VerificationError whose Commit the caller fills.
func VerifySignature(payload []byte, signature string, keys TrustedKeys, now time.Time) (Signer, error) {
	failed := func(failure SignatureFailure, signer, detail string) error {
		return &VerificationError{Signer: signer, Failure: failure, Detail: detail}
	}
	if strings.TrimSpace(signature) == "" {
		return Signer{}, failed(Unsigned, "", "no signature")
	}
	if strings.HasPrefix(strings.TrimSpace(signature), sshSignatureArmorHeader) {
		return VerifySSHSignature(payload, signature, keys.allowedSigners, now)
	}
	block, err := armor.Decode(strings.NewReader(signature))
	if err != nil {
		return Signer{}, failed(BadSignature, "", fmt.Sprintf("the signature is neither SSH nor armored OpenPGP: %v", err))
	}
	if block.Type != openpgp.SignatureType {
		// An X.509 signature, say: no key of ours can check it.
		return Signer{}, failed(UnknownKey, "", fmt.Sprintf("a %q, and only OpenPGP and SSH keys are trusted", block.Type))
	}
	raw, err := io.ReadAll(block.Body)
	if err != nil {
		return Signer{}, failed(BadSignature, "", fmt.Sprintf("the signature does not decode: %v", err))
	}
	packetSignature, err := onlySignature(raw)
	if err != nil {
		return Signer{}, failed(BadSignature, "", err.Error())
	}
	signerName := issuerOf(packetSignature)
	if packetSignature.IssuerKeyId == nil || len(keys.keyring.KeysByIdUsage(*packetSignature.IssuerKeyId, packet.KeyFlagSign)) == 0 {
		return Signer{}, failed(UnknownKey, signerName, "no trusted key made it")
	}
	config := &packet.Config{Time: func() time.Time { return now }}
	_, entity, err := openpgp.VerifyDetachedSignature(keys.keyring, bytes.NewReader(payload), bytes.NewReader(raw), config)
	if entity != nil {
		signerName = signerOf(entity)
	}
	switch {
	case err == nil:
		return Signer{Key: signerName, Principals: emailsOf(entity)}, nil
	case errors.Is(err, pgperrors.ErrKeyExpired):
		return Signer{}, failed(ExpiredKey, signerName, fmt.Sprintf("the key expired before %s", now.UTC().Format(time.RFC3339)))
	case errors.Is(err, pgperrors.ErrSignatureExpired):
		return Signer{}, failed(ExpiredKey, signerName, fmt.Sprintf("the signature, or the key's self-signature, expired before %s", now.UTC().Format(time.RFC3339)))
	case errors.Is(err, pgperrors.ErrKeyRevoked):
		return Signer{}, failed(BadSignature, signerName, "the key is revoked")
	default:
		return Signer{}, failed(BadSignature, signerName, fmt.Sprintf("the signature does not match: %v", err))
	}
}

// emailsOf are the emails of an OpenPGP key's user IDs: the principals a
// path rule matches for it.
func emailsOf(entity *openpgp.Entity) []string {
	var emails []string
	for _, identity := range entity.Identities {
		if identity.UserId != nil && identity.UserId.Email != "" {
			emails = append(emails, identity.UserId.Email)
		}
	}
	sort.Strings(emails)
	return emails
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

// VerifyCommit verifies the signature of commit (a full SHA-1) of the
// landscapes' repository against keys at now (VerifyCommitSignature), read
// within the repository's object limits: `rollout status` reads the
// rollout file only from a commit that verifies, as an operator with
// spec.verify does.
func (l *Landscapes) VerifyCommit(commit string, keys TrustedKeys, now time.Time) (Signer, error) {
	read, err := l.repository.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return Signer{}, fmt.Errorf("read commit %s: %w", commit, err)
	}
	return VerifyCommitSignature(read, keys, now)
}
