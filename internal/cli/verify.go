package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
)

// maxKeyFileSize bounds each file of trusted keys read: a keyring of
// hundreds of keys is far smaller.
const maxKeyFileSize = 4 << 20

// verifyFlags are the flags of signature verification, shared by verify
// (unprefixed) and build and diff (prefixed verify-), so that a pull
// request is checked as the operator's spec.verify checks the revision.
type verifyFlags struct {
	prefix         string
	keys           string
	allowedSigners string
	mode           string
	pathRules      string
	maxCommits     int
}

func (v *verifyFlags) name(flag string) string { return v.prefix + flag }

func (v *verifyFlags) bind(fs *pflag.FlagSet, prefix string) {
	v.bindKeys(fs, prefix)
	fs.StringVar(&v.mode, v.name("mode"), string(gitsource.VerifyModeHEAD), "what must be signed: HEAD (every commit), Tag (the annotated tag HEAD of the range names) or TagAndHEAD, as spec.verify.mode")
	fs.StringVar(&v.pathRules, v.name("path-rules"), "", "a YAML `FILE` of path rules, a list as spec.verify.pathRules: [{paths: [overlays/prod/**], principals: [prod-owner]}]")
	fs.IntVar(&v.maxCommits, v.name("max-commits"), gitsource.DefaultMaxVerifiedCommits, "the most commits one range verifies, as spec.verify.maxCommits")
}

// bindKeys binds the flags of the trusted keys alone: what 'rollout status'
// verifies the rollout file's commit with, as the operator verifies the tip
// it reads the file from (one commit's signature, whatever the mode and
// path rules).
func (v *verifyFlags) bindKeys(fs *pflag.FlagSet, prefix string) {
	v.prefix = prefix
	fs.StringVar(&v.keys, v.name("keys"), "", "trusted keys: a `FILE`, or a DIR of files, named as the entries of spec.verify.secretRef's Secret "+
		"(NAME.asc: armored OpenPGP public keys; allowed_signers or NAME.allowed_signers: SSH keys)")
	fs.StringVar(&v.allowedSigners, v.name("allowed-signers"), "", "an SSH allowed_signers `FILE` (git's gpg.ssh.allowedSignersFile) to trust too")
}

// enabled says whether any key was given: verification is on.
func (v *verifyFlags) enabled() bool { return v.keys != "" || v.allowedSigners != "" }

// check reads the keys and rules the flags name.
func (v *verifyFlags) check() (gitsource.TrustedKeys, gitsource.RevisionCheck, error) {
	mode := gitsource.VerifyMode(v.mode)
	switch mode {
	case gitsource.VerifyModeHEAD, gitsource.VerifyModeTag, gitsource.VerifyModeTagAndHEAD:
	default:
		return gitsource.TrustedKeys{}, gitsource.RevisionCheck{}, usageErrorf("--%s %q is not one of HEAD, Tag, TagAndHEAD", v.name("mode"), v.mode)
	}
	if v.maxCommits < 1 {
		return gitsource.TrustedKeys{}, gitsource.RevisionCheck{}, usageErrorf("--%s %d: verify at least one commit", v.name("max-commits"), v.maxCommits)
	}
	keys, err := v.trustedKeys()
	if err != nil {
		return gitsource.TrustedKeys{}, gitsource.RevisionCheck{}, err
	}
	check := gitsource.RevisionCheck{Mode: mode, Range: gitsource.RangeOptions{MaxCommits: v.maxCommits, LimitName: "--" + v.name("max-commits")}}
	if v.pathRules != "" {
		if check.Range.Rules, err = readPathRules(v.pathRules, "--"+v.name("path-rules")); err != nil {
			return gitsource.TrustedKeys{}, gitsource.RevisionCheck{}, err
		}
	}
	return keys, check, nil
}

// trustedKeys reads the keys --keys and --allowed-signers name.
func (v *verifyFlags) trustedKeys() (gitsource.TrustedKeys, error) {
	if !v.enabled() {
		return gitsource.TrustedKeys{}, usageErrorf("give the trusted keys with --%s or --%s", v.name("keys"), v.name("allowed-signers"))
	}
	data := map[string][]byte{}
	if v.keys != "" {
		if err := readKeyFiles(v.keys, data); err != nil {
			return gitsource.TrustedKeys{}, fmt.Errorf("--%s: %w", v.name("keys"), err)
		}
	}
	if v.allowedSigners != "" {
		content, err := readKeyFile(v.allowedSigners)
		if err != nil {
			return gitsource.TrustedKeys{}, fmt.Errorf("--%s: %w", v.name("allowed-signers"), err)
		}
		// Named as a Secret's allowed_signers entry, after any of --keys.
		data["~"+gitsource.AllowedSignersFileSuffix] = content
	}
	return gitsource.ParseTrustedKeys(fmt.Sprintf("--%s %s --%s %s", v.name("keys"), v.keys, v.name("allowed-signers"), v.allowedSigners), data)
}

// readKeyFiles reads path, a file or a directory of files (not
// recursively, dotfiles skipped), into data by base name.
func readKeyFiles(path string, data map[string][]byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	files := []string{path}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		files = files[:0]
		for _, entry := range entries {
			if !entry.IsDir() && entry.Name()[0] != '.' {
				files = append(files, filepath.Join(path, entry.Name()))
			}
		}
	}
	for _, file := range files {
		content, err := readKeyFile(file)
		if err != nil {
			return err
		}
		data[filepath.Base(file)] = content
	}
	return nil
}

func readKeyFile(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Size() > maxKeyFileSize {
		return nil, fmt.Errorf("%s: %d bytes, more than a file of keys holds (%d)", path, info.Size(), maxKeyFileSize)
	}
	return os.ReadFile(path)
}

// readPathRules reads a YAML list of path rules, strictly, and checks them.
func readPathRules(path, flag string) ([]gitsource.PathRule, error) {
	content, err := readKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	var rules []v1alpha1.SignaturePathRule
	if err := yaml.UnmarshalStrict(content, &rules); err != nil {
		return nil, fmt.Errorf("%s: %s: not a list of {paths, principals}: %w", flag, path, err)
	}
	converted := make([]gitsource.PathRule, 0, len(rules))
	for _, rule := range rules {
		converted = append(converted, gitsource.PathRule{Paths: rule.Paths, Principals: rule.Principals})
	}
	if err := gitsource.ValidatePathRules(flag+" "+path, converted); err != nil {
		return nil, err
	}
	return converted, nil
}

// verifyRange verifies revisionRange of the repository at repo as flags
// say, prints every verdict, oldest first, to out, and returns
// errInvalidInputReported when one is refused.
func (v *verifyFlags) verifyRange(repo, revisionRange string, now time.Time, maxCheckoutSize int64, out io.Writer) error {
	keys, check, err := v.check()
	if err != nil {
		return err
	}
	verdicts, err := gitsource.VerifyLocal(repo, revisionRange, check, keys, now, gitsource.ObjectLimitsFor(maxCheckoutSize))
	if err != nil {
		return err
	}
	refused := false
	for i := len(verdicts) - 1; i >= 0; i-- {
		verdict := verdicts[i]
		var failed *gitsource.VerificationError
		switch {
		case verdict.Err == nil:
			fmt.Fprintf(out, "verified %s %s: signed by %s\n", objectOf(verdict), verdict.Commit, verdict.Signer)
		case errors.As(verdict.Err, &failed):
			refused = true
			fmt.Fprintf(out, "refused  %s\n", failed)
		default:
			refused = true
			fmt.Fprintf(out, "refused  %s %s: %v\n", objectOf(verdict), verdict.Commit, verdict.Err)
		}
	}
	if refused {
		return errInvalidInputReported
	}
	return nil
}

func objectOf(verdict gitsource.CommitVerdict) string {
	if verdict.Object == "" {
		return "commit"
	}
	return verdict.Object
}

func newVerifyCommand() *cobra.Command {
	var flags verifyFlags
	var at timeFlag
	repo := "."
	maxCheckoutSize := defaultMaxCheckoutSize
	cmd := &cobra.Command{
		Use:   "verify (--keys FILE|DIR | --allowed-signers FILE) [--mode HEAD|Tag|TagAndHEAD] [--path-rules FILE] [--repo DIR] [--at TIME] REV_RANGE",
		Short: "Check that the commits of a range are signed by trusted keys, for CI",
		Long: `Verifies the signatures of a revision range of the Git repository at --repo
(default: the current directory), read with go-git, as the operator's
spec.verify verifies a revision (docs/security.md):

  BASE..HEAD  every commit reachable from HEAD and not from BASE, as the
              operator with spec.verify.pathRules verifies every commit since
              the last applied revision: origin/main..HEAD checks a pull request
  REV         REV alone, as the first revision a landscape applies

Each commit must carry an OpenPGP or SSH signature (gpgsig) of a trusted key
valid at --at (default now): --keys names a file, or a directory of files,
named as the entries of spec.verify.secretRef's Secret (NAME.asc: armored
OpenPGP public keys, allowed_signers or NAME.allowed_signers: SSH keys in
git's allowed_signers format); --allowed-signers names an allowed_signers
file too. With --mode Tag or TagAndHEAD, HEAD of the range must name an
annotated tag, signed. With --path-rules (a YAML list as
spec.verify.pathRules), a commit that changes a path a rule matches must be
signed by a key with one of the rule's principals.

Prints one line per commit, oldest first: "verified commit SHA: signed by
KEY (PRINCIPALS)" or "refused  commit SHA: WHY: signed by KEY: DETAIL", WHY
one of unsigned, unknown key, bad signature, expired key, path rule.

Exit status: 0 when every commit verifies; 1 when one is refused (every
verdict is printed), or a revision or key file cannot be read, or the range
holds more than --max-commits commits; 2 on a usage error.`,
		Example: `  profilesync verify --keys .github/trusted-keys origin/main..HEAD
  profilesync verify --allowed-signers allowed_signers --path-rules path-rules.yaml origin/main..HEAD
  profilesync verify --keys release.asc --mode Tag v1.4.0`,
		DisableFlagsInUseLine: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("expected exactly one REV_RANGE, got %d arguments", len(args))
			}
			return nil
		},
		RunE: failOnInput(func(cmd *cobra.Command, args []string) error {
			return flags.verifyRange(repo, args[0], at.or(time.Now()), maxCheckoutSize, cmd.OutOrStdout())
		}),
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	flags.bind(fs, "")
	fs.StringVar(&repo, "repo", repo, "the Git repository `DIR` (or a directory in its work tree)")
	fs.Var(&at, "at", "verify at this RFC 3339 time: keys expired then are refused (default now)")
	fs.Var(byteSize{&maxCheckoutSize}, gitsource.MaxCheckoutSizeFlag, "the largest Git object read, as the operator bounds its checkout (bytes, or a quantity like 64Mi)")
	return cmd
}
