package gitsource

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// AllowedSignersFileName, or a name ending in AllowedSignersFileSuffix,
// marks an entry of a trusted keys Secret that holds SSH public keys in
// git's allowed_signers format (gpg.ssh.allowedSignersFile, ssh-keygen(1)'s
// ALLOWED SIGNERS): one key a line, after its principals.
const (
	AllowedSignersFileName   = "allowed_signers"
	AllowedSignersFileSuffix = ".allowed_signers"
)

// SSHSignatureNamespace is the namespace git signs commits and tags in
// (ssh-keygen -Y sign -n git): a signature made for another namespace, a
// file signature say, does not verify as a commit's.
const SSHSignatureNamespace = "git"

// sshSignatureArmorHeader starts an armored SSH signature, as git writes it
// into a commit's gpgsig header.
const sshSignatureArmorHeader = "-----BEGIN " + sshsig.PEMType + "-----"

// isAllowedSignersEntry says whether a Secret entry's name marks it as
// allowed_signers.
func isAllowedSignersEntry(name string) bool {
	return name == AllowedSignersFileName || strings.HasSuffix(name, AllowedSignersFileSuffix)
}

// AllowedSigner is one line of an allowed_signers file: a public key, the
// principals it signs as, and where and when it may sign.
type AllowedSigner struct {
	Principals []string
	Key        ssh.PublicKey
	// Namespaces are the patterns of namespaces= (empty: any namespace).
	Namespaces []string
	// ValidAfter and ValidBefore bound when the key is trusted (zero: no
	// bound).
	ValidAfter, ValidBefore time.Time
}

// AllowedSigners are the SSH keys a ProfileSync trusts, in file order.
type AllowedSigners []AllowedSigner

// ParseAllowedSigners reads data as git's allowed_signers file: each line
// `principals [options] keytype base64 [comment]`, principals separated by
// commas, options namespaces="...", valid-after="..." and
// valid-before="..." (YYYYMMDD[HHMM[SS]][Z], read as UTC: the operator
// runs in no one's time zone). Blank lines and lines starting with # are
// skipped. cert-authority is refused (certificates are not supported), and
// so is any other option: a line the operator cannot read in full is not
// trusted in part. source names the file in errors, which give the line.
func ParseAllowedSigners(source string, data []byte) (AllowedSigners, error) {
	var signers AllowedSigners
	lines := bufio.NewScanner(bytes.NewReader(data))
	lines.Buffer(make([]byte, 0, 4096), 64*1024)
	for number := 1; lines.Scan(); number++ {
		line := strings.TrimSpace(lines.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		signer, err := parseAllowedSigner(line)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", source, number, err)
		}
		signers = append(signers, signer)
	}
	if err := lines.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return signers, nil
}

func parseAllowedSigner(line string) (AllowedSigner, error) {
	principals, rest, err := cutPrincipals(line)
	if err != nil {
		return AllowedSigner{}, err
	}
	// What follows the principals is an authorized_keys line: options, key,
	// comment. x/crypto/ssh reads it, quoted options included.
	key, _, options, _, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return AllowedSigner{}, fmt.Errorf("principals %q: not [options] keytype base64-key: %w", principals, err)
	}
	signer := AllowedSigner{Key: key}
	for _, principal := range strings.Split(principals, ",") {
		if principal = strings.TrimSpace(principal); principal != "" {
			signer.Principals = append(signer.Principals, principal)
		}
	}
	if len(signer.Principals) == 0 {
		return AllowedSigner{}, errors.New("no principal before the key")
	}
	for _, option := range options {
		name, value, hasValue := strings.Cut(option, "=")
		value = strings.Trim(value, `"`)
		switch strings.ToLower(name) {
		case "namespaces":
			for _, namespace := range strings.Split(value, ",") {
				if strings.HasPrefix(namespace, "!") {
					return AllowedSigner{}, fmt.Errorf("option %s: negated namespaces are not supported; list the namespaces allowed", option)
				}
				if _, err := path.Match(namespace, ""); err != nil || namespace == "" {
					return AllowedSigner{}, fmt.Errorf("option %s: %q is no namespace pattern", option, namespace)
				}
				signer.Namespaces = append(signer.Namespaces, namespace)
			}
		case "valid-after", "valid-before":
			if !hasValue {
				return AllowedSigner{}, fmt.Errorf("option %s needs a time", name)
			}
			at, err := parseSignerTime(value)
			if err != nil {
				return AllowedSigner{}, fmt.Errorf("option %s: %w", option, err)
			}
			if strings.EqualFold(name, "valid-after") {
				signer.ValidAfter = at
			} else {
				signer.ValidBefore = at
			}
		case "cert-authority":
			return AllowedSigner{}, errors.New("cert-authority: SSH certificates are not supported; list each signer's own key")
		default:
			return AllowedSigner{}, fmt.Errorf("option %q is not one of namespaces, valid-after, valid-before", option)
		}
	}
	return signer, nil
}

// cutPrincipals splits the principals field (quoted when it holds spaces)
// from the rest of an allowed_signers line.
func cutPrincipals(line string) (principals, rest string, err error) {
	if strings.HasPrefix(line, `"`) {
		end := strings.Index(line[1:], `"`)
		if end < 0 {
			return "", "", errors.New("the quoted principals do not end")
		}
		return line[1 : end+1], strings.TrimSpace(line[end+2:]), nil
	}
	principals, rest, found := strings.Cut(line, " ")
	if !found {
		if principals, rest, found = strings.Cut(line, "\t"); !found {
			return "", "", errors.New("principals without a key")
		}
	}
	return principals, strings.TrimSpace(rest), nil
}

// parseSignerTime reads ssh-keygen's YYYYMMDD[HHMM[SS]][Z] in UTC.
func parseSignerTime(value string) (time.Time, error) {
	value = strings.TrimSuffix(value, "Z")
	for _, layout := range []string{"20060102", "200601021504", "20060102150405"} {
		if len(value) == len(layout) {
			at, err := time.ParseInLocation(layout, value, time.UTC)
			if err != nil {
				return time.Time{}, fmt.Errorf("%q is not YYYYMMDD[HHMM[SS]][Z]: %w", value, err)
			}
			return at, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not YYYYMMDD[HHMM[SS]][Z]", value)
}

// allowsNamespace says whether the signer may sign in namespace.
func (s AllowedSigner) allowsNamespace(namespace string) bool {
	if len(s.Namespaces) == 0 {
		return true
	}
	for _, pattern := range s.Namespaces {
		if matched, _ := path.Match(pattern, namespace); matched {
			return true
		}
	}
	return false
}

// Signer is who made a verified signature: the key, named by its
// fingerprint and owner, and the principals path rules match (an SSH
// key's allowed_signers principals; an OpenPGP key's user ID emails).
type Signer struct {
	// Key is "OpenPGP key <FINGERPRINT> (<primary identity>)" or
	// "SSH key SHA256:<fingerprint>".
	Key        string
	Principals []string
}

// String names the signer for messages.
func (s Signer) String() string {
	if len(s.Principals) == 0 || strings.HasPrefix(s.Key, "OpenPGP") {
		return s.Key
	}
	return fmt.Sprintf("%s (%s)", s.Key, strings.Join(s.Principals, ", "))
}

// HasPrincipal says whether the signer signs as one of principals.
func (s Signer) HasPrincipal(principals []string) bool {
	for _, have := range s.Principals {
		for _, want := range principals {
			if have == want {
				return true
			}
		}
	}
	return false
}

// VerifySSHSignature checks an armored SSH signature (what git writes in a
// gpgsig header, or `ssh-keygen -Y sign -n git`) over message against
// signers at now, in the namespace git signs in: the key must be listed,
// allowed the namespace, within valid-after and valid-before at now, and
// the signature must be the key's over message. It returns the signer
// (principals and SHA256 fingerprint), or a *VerificationError (its Commit
// empty: the caller names the object signed). The cryptography is
// hiddeco/sshsig's over x/crypto/ssh, as fluxcd/pkg/git/signatures uses.
func VerifySSHSignature(message []byte, armoredSignature string, signers AllowedSigners, now time.Time) (Signer, error) {
	failed := func(failure SignatureFailure, signer, detail string) error {
		return &VerificationError{Signer: signer, Failure: failure, Detail: detail}
	}
	if strings.TrimSpace(armoredSignature) == "" {
		return Signer{}, failed(Unsigned, "", "no signature")
	}
	signature, err := sshsig.Unarmor([]byte(armoredSignature))
	if err != nil {
		return Signer{}, failed(BadSignature, "", fmt.Sprintf("the signature is not an armored SSH signature: %v", err))
	}
	keyName := "SSH key " + ssh.FingerprintSHA256(signature.PublicKey)
	if len(signers) == 0 {
		return Signer{}, failed(UnknownKey, keyName, "no SSH key is trusted (no allowed_signers entry)")
	}
	var listed []AllowedSigner
	keyBytes := signature.PublicKey.Marshal()
	for _, signer := range signers {
		if bytes.Equal(signer.Key.Marshal(), keyBytes) {
			listed = append(listed, signer)
		}
	}
	if len(listed) == 0 {
		return Signer{}, failed(UnknownKey, keyName, "no trusted key made it")
	}
	var inNamespace []AllowedSigner
	for _, signer := range listed {
		if signer.allowsNamespace(SSHSignatureNamespace) {
			inNamespace = append(inNamespace, signer)
		}
	}
	if len(inNamespace) == 0 {
		return Signer{}, failed(UnknownKey, keyName, fmt.Sprintf("the key is trusted for namespaces %s only, not %q", strings.Join(listed[0].Namespaces, ","), SSHSignatureNamespace))
	}
	if signature.Namespace != SSHSignatureNamespace {
		return Signer{}, failed(BadSignature, keyName, fmt.Sprintf("the signature is made for namespace %q, not %q", signature.Namespace, SSHSignatureNamespace))
	}
	if err := sshsig.Verify(bytes.NewReader(message), signature, signature.PublicKey, signature.HashAlgorithm, SSHSignatureNamespace); err != nil {
		return Signer{}, failed(BadSignature, keyName, fmt.Sprintf("the signature does not match: %v", err))
	}
	var valid []AllowedSigner
	for _, signer := range inNamespace {
		if (signer.ValidAfter.IsZero() || !now.Before(signer.ValidAfter)) && (signer.ValidBefore.IsZero() || now.Before(signer.ValidBefore)) {
			valid = append(valid, signer)
		}
	}
	if len(valid) == 0 {
		first := inNamespace[0]
		detail := fmt.Sprintf("the key is valid before %s only", first.ValidBefore.UTC().Format(time.RFC3339))
		if !first.ValidAfter.IsZero() && now.Before(first.ValidAfter) {
			detail = fmt.Sprintf("the key is valid after %s only", first.ValidAfter.UTC().Format(time.RFC3339))
		}
		return Signer{}, failed(ExpiredKey, keyName, fmt.Sprintf("%s, not at %s", detail, now.UTC().Format(time.RFC3339)))
	}
	signer := Signer{Key: keyName}
	seen := map[string]bool{}
	for _, entry := range valid {
		for _, principal := range entry.Principals {
			if !seen[principal] {
				seen[principal] = true
				signer.Principals = append(signer.Principals, principal)
			}
		}
	}
	return signer, nil
}
