package propose

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilesync/profilesync/internal/repofile"
	"github.com/profilesync/profilesync/internal/rollout"
)

// FileName is the name of the versions file: the sources of new versions
// and the schedule proposals follow. It sits at the repository root, one per
// repository, and holds no profiles.
const FileName = "profilesync-versions.yaml"

// IsFileName reports whether name, a file's base name, is the versions file.
func IsFileName(name string) bool { return name == FileName }

// APIVersion and Kind identify the versions file's schema.
const (
	APIVersion = "versions.profilesync.io/v1alpha1"
	Kind       = "VersionSources"
)

// Defaults of the schedule. DefaultExpiryAfterDeprecation is Gardener's
// expirationDuration (2880h, "4 months"), which version management adds to
// the date a version is deprecated.
const (
	DefaultPreviewDuration        = 14 * day
	DefaultExpiryAfterDeprecation = 120 * day
	DefaultRetirementAge          = 90 * day
)

// Bounds of the file: anything beyond them is a typo (a missing unit, a 0 too
// many), not a plan.
const (
	MaxSources       = 50
	MaxFeeds         = 50
	MaxDuration      = 3 * 365 * day
	MaxTagPatternLen = 256
)

// Default tag patterns: the first group of the match is the version.
// Kubernetes tags its releases v1.34.3; images are tagged 1877.3, 1877.3.0
// or v1.2.3.
const (
	DefaultGitTagPattern = `^v(\d+\.\d+\.\d+)$`
	DefaultOCITagPattern = `^v?(\d+(?:\.\d+){0,2})$`
)

const day = 24 * time.Hour

// File is a decoded and checked versions file.
type File struct {
	Schedule Schedule
	Sources  []Source
}

// Schedule says when the stages proposals write start.
type Schedule struct {
	// PreviewDuration is how long a new version stays in preview before it
	// becomes supported (for a new minor, at most the policy's
	// preview.maxDays); a new patch takes over no sooner than the policy's
	// notice allows either.
	PreviewDuration time.Duration
	// ExpiryAfterDeprecation is how long after its deprecation a version
	// expires.
	ExpiryAfterDeprecation time.Duration
	// RetirementAge is how long a version stays listed after it expired
	// before it is removed from the profile.
	RetirementAge time.Duration
}

// Source is where new versions of one kind come from.
type Source struct {
	// Name is a DNS label, unique in the file; failures name it.
	Name string
	// Git is set for a source of Kubernetes versions, OCI for one of machine
	// image versions; exactly one of them is.
	Git *GitSource
	OCI *OCISource
	// TagPattern picks the tags that are versions; its first group is the
	// version.
	TagPattern *regexp.Regexp
	// Versions is the semver range of the versions proposed; nil proposes
	// every version.
	Versions *semver.Constraints
	// Cooldown is how old a release must be before it is proposed.
	Cooldown time.Duration
	// Feeds are the profiles (and, for an OCI source, machine images) the
	// versions go into.
	Feeds []Feed
}

// GitSource lists the tags of a Git repository.
type GitSource struct {
	// URL is https://, http://, ssh:// or scp-like (git@host:path).
	URL         string
	Credentials *Credentials
}

// OCISource lists the tags of an OCI repository.
type OCISource struct {
	// Repository is a reference without tag: ghcr.io/gardenlinux/gardenlinux.
	Repository  string
	Credentials *Credentials
}

// Credentials name where a source's credentials are: a Secret for the
// operator, environment variables for the CLI. The variables hold what the
// Secret's keys of the same names hold: username and password (for ssh,
// password is the identity's passphrase), identity (an ssh private key,
// PEM) and known_hosts (the ssh server's host keys, which are always
// checked).
type Credentials struct {
	SecretName    string
	UsernameEnv   string
	PasswordEnv   string
	IdentityEnv   string
	KnownHostsEnv string
}

// Feed is one profile a source's versions go into.
type Feed struct {
	// File is the repository-relative file that holds the CloudProfile.
	File string
	// CloudProfile is the CloudProfile's name.
	CloudProfile string
	// MachineImage is the image's name for an OCI source, empty for Git.
	MachineImage string
}

// Version returns the version a tag names, or false when the tag is not one
// of the source's versions (the pattern does not match, it is no semver, it
// is outside the range).
func (s *Source) Version(tag string) (*semver.Version, bool) {
	v, verdict := s.Classify(tag)
	return v, verdict == TagIsVersion
}

// TagVerdict says whether a tag is one of a source's versions, and if not,
// which of the source's rules it fails first.
type TagVerdict int

const (
	// TagIsVersion: the tag is one of the source's versions.
	TagIsVersion TagVerdict = iota
	// TagNotMatched: the tag pattern does not match, or its group is empty.
	TagNotMatched
	// TagNotRelease: the version is no semver, or a pre-release or build.
	TagNotRelease
	// TagOutOfRange: the version is outside the source's semver range.
	TagOutOfRange
)

// Classify returns the version a tag names and the verdict: the version
// is nil unless the tag passes the pattern and is a release.
func (s *Source) Classify(tag string) (*semver.Version, TagVerdict) {
	match := s.TagPattern.FindStringSubmatch(tag)
	if len(match) < 2 || match[1] == "" {
		return nil, TagNotMatched
	}
	v, err := semver.NewVersion(match[1])
	if err != nil || v.Prerelease() != "" || v.Metadata() != "" {
		return nil, TagNotRelease
	}
	if s.Versions != nil && !s.Versions.Check(v) {
		return v, TagOutOfRange
	}
	return v, TagIsVersion
}

// document is the file as written.
type document struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Schedule   scheduleDocument `json:"schedule,omitempty"`
	Sources    []sourceDocument `json:"sources"`
}

type scheduleDocument struct {
	PreviewDuration        string `json:"previewDuration,omitempty"`
	ExpiryAfterDeprecation string `json:"expiryAfterDeprecation,omitempty"`
	RetirementAge          string `json:"retirementAge,omitempty"`
}

type sourceDocument struct {
	Name       string         `json:"name"`
	Git        *gitDocument   `json:"git,omitempty"`
	OCI        *ociDocument   `json:"oci,omitempty"`
	TagPattern string         `json:"tagPattern,omitempty"`
	Versions   string         `json:"versions,omitempty"`
	Cooldown   string         `json:"cooldown,omitempty"`
	Feeds      []feedDocument `json:"feeds"`
}

type gitDocument struct {
	URL         string               `json:"url"`
	Credentials *credentialsDocument `json:"credentials,omitempty"`
}

type ociDocument struct {
	Repository  string               `json:"repository"`
	Credentials *credentialsDocument `json:"credentials,omitempty"`
}

type credentialsDocument struct {
	SecretName    string `json:"secretName,omitempty"`
	UsernameEnv   string `json:"usernameEnv,omitempty"`
	PasswordEnv   string `json:"passwordEnv,omitempty"`
	IdentityEnv   string `json:"identityEnv,omitempty"`
	KnownHostsEnv string `json:"knownHostsEnv,omitempty"`
}

type feedDocument struct {
	File         string `json:"file"`
	CloudProfile string `json:"cloudProfile"`
	MachineImage string `json:"machineImage,omitempty"`
}

// DecodeError is everything wrong with a versions file, one problem per
// line, each naming the file and, where it is known, the field.
type DecodeError = repofile.DecodeError

var settingsFile = repofile.SettingsFile{Kind: "versions", Shape: "a mapping with apiVersion, kind, schedule and sources", Docs: "docs/versions.md"}

// Decode reads a versions file strictly, as the other settings files are
// read (repofile.DecodeSettings): unknown and duplicate fields, values of
// the wrong type, and values that cannot be followed are refused, every
// problem at once, as a *DecodeError naming the file (as given) and field.
func Decode(file string, data []byte) (*File, error) {
	var doc document
	if problems, _ := settingsFile.DecodeSettings(data, &doc); len(problems) > 0 {
		return nil, &DecodeError{File: file, Problems: problems}
	}
	f, problems := doc.check()
	if len(problems) > 0 {
		return nil, &DecodeError{File: file, Problems: problems}
	}
	return f, nil
}

// Read reads the versions file at the root of the repository reader reads,
// through the confined reader. It returns nil and no error when the
// repository has none.
func Read(reader *repofile.Reader) (*File, error) {
	data, err := reader.ReadFile(FileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the versions file: %w", err)
	}
	return Decode(FileName, data)
}

func (d *document) check() (*File, []string) {
	var problems []string
	add := func(p *field.Path, format string, args ...any) {
		problems = append(problems, p.String()+": "+fmt.Sprintf(format, args...))
	}
	if d.APIVersion != APIVersion {
		add(field.NewPath("apiVersion"), "must be %s, not %q", APIVersion, d.APIVersion)
	}
	if d.Kind != Kind {
		add(field.NewPath("kind"), "must be %s, not %q", Kind, d.Kind)
	}
	f := &File{Schedule: Schedule{
		PreviewDuration:        DefaultPreviewDuration,
		ExpiryAfterDeprecation: DefaultExpiryAfterDeprecation,
		RetirementAge:          DefaultRetirementAge,
	}}
	schedule := field.NewPath("schedule")
	duration := func(p *field.Path, value string, least time.Duration, out *time.Duration) {
		if value == "" {
			return
		}
		parsed, err := rollout.ParseDuration(value)
		switch {
		case err != nil:
			add(p, "%q is not a duration like 12h or 30d", value)
		case parsed < least:
			add(p, "%s is shorter than %s", value, formatDays(least))
		case parsed > MaxDuration:
			add(p, "%s is longer than %s, the longest this file takes", value, formatDays(MaxDuration))
		default:
			*out = parsed
		}
	}
	duration(schedule.Child("previewDuration"), d.Schedule.PreviewDuration, 0, &f.Schedule.PreviewDuration)
	duration(schedule.Child("expiryAfterDeprecation"), d.Schedule.ExpiryAfterDeprecation, day, &f.Schedule.ExpiryAfterDeprecation)
	duration(schedule.Child("retirementAge"), d.Schedule.RetirementAge, 0, &f.Schedule.RetirementAge)

	sourcesPath := field.NewPath("sources")
	switch {
	case len(d.Sources) == 0:
		add(sourcesPath, "required: the file lists at least one source")
	case len(d.Sources) > MaxSources:
		add(sourcesPath, "%d sources are more than the %d a file may list", len(d.Sources), MaxSources)
		return nil, problems
	}
	names := map[string]int{}
	feeds := map[Feed]string{}
	for i, s := range d.Sources {
		p := sourcesPath.Index(i)
		out := Source{Name: s.Name}
		switch errs := validation.IsDNS1123Label(s.Name); {
		case s.Name == "":
			add(p.Child("name"), "required: every source has a name, which its failures are reported by")
		case len(errs) > 0:
			add(p.Child("name"), "%q is not a valid name: %s", s.Name, strings.Join(errs, "; "))
		default:
			if first, seen := names[s.Name]; seen {
				add(p.Child("name"), "duplicate name %q: sources[%d] has it too", s.Name, first)
			}
			names[s.Name] = i
		}
		pattern := DefaultGitTagPattern
		switch {
		case s.Git != nil && s.OCI != nil:
			add(p, "set git or oci, not both: a source lists the tags of one repository")
		case s.Git == nil && s.OCI == nil:
			add(p, "required: git (Kubernetes versions from a Git repository's tags) or oci (machine image versions from an OCI repository's tags)")
		case s.Git != nil:
			out.Git = &GitSource{URL: s.Git.URL}
			problems = append(problems, checkGit(p.Child("git"), s.Git, out.Git)...)
		default:
			pattern = DefaultOCITagPattern
			out.OCI = &OCISource{Repository: s.OCI.Repository}
			problems = append(problems, checkOCI(p.Child("oci"), s.OCI, out.OCI)...)
		}
		checkTags(p, s, pattern, &out, add)
		duration(p.Child("cooldown"), s.Cooldown, 0, &out.Cooldown)
		out.Feeds = checkFeeds(p.Child("feeds"), s, feeds, add)
		f.Sources = append(f.Sources, out)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return f, nil
}

// checkFeeds checks a source's feeds; seen holds the lists fed so far, by
// the source that feeds them.
func checkFeeds(feedsPath *field.Path, s sourceDocument, seen map[Feed]string, add func(*field.Path, string, ...any)) []Feed {
	var out []Feed
	switch {
	case len(s.Feeds) == 0:
		add(feedsPath, "required: at least one profile the versions go into")
	case len(s.Feeds) > MaxFeeds:
		add(feedsPath, "%d feeds are more than the %d a source may list", len(s.Feeds), MaxFeeds)
	}
	for j, feed := range s.Feeds {
		if j >= MaxFeeds {
			break
		}
		fp := feedsPath.Index(j)
		clean, ok := checkFeedFile(fp.Child("file"), feed.File, add)
		if feed.CloudProfile == "" {
			add(fp.Child("cloudProfile"), "required: the name of the CloudProfile the versions go into")
		}
		switch {
		case s.OCI != nil && s.Git == nil && feed.MachineImage == "":
			add(fp.Child("machineImage"), "required: the machine image of the CloudProfile the OCI source's versions go into")
		case s.Git != nil && feed.MachineImage != "":
			add(fp.Child("machineImage"), "a Git source feeds Kubernetes versions: leave machineImage out, or use an oci source")
		}
		out = append(out, Feed{File: clean, CloudProfile: feed.CloudProfile, MachineImage: feed.MachineImage})
		if ok && feed.CloudProfile != "" {
			key := Feed{CloudProfile: feed.CloudProfile, MachineImage: feed.MachineImage}
			if other, fed := seen[key]; fed {
				add(fp, "%s is fed by source %s too: one list of versions has one source", feedLabel(key), other)
			}
			seen[key] = s.Name
		}
	}
	return out
}

// checkTags checks a source's tag pattern (pattern when it sets none) and
// semver range into out.
func checkTags(p *field.Path, s sourceDocument, pattern string, out *Source, add func(*field.Path, string, ...any)) {
	if s.TagPattern != "" {
		pattern = s.TagPattern
	}
	switch re, err := regexp.Compile(pattern); {
	case len(pattern) > MaxTagPatternLen:
		add(p.Child("tagPattern"), "%d characters are more than the %d a pattern may have", len(pattern), MaxTagPatternLen)
	case err != nil:
		add(p.Child("tagPattern"), "not a regular expression: %s", repofile.OneLine(err.Error()))
	case re.NumSubexp() < 1:
		add(p.Child("tagPattern"), "%q has no group: its first group, in parentheses, is the version", pattern)
	default:
		out.TagPattern = re
	}
	if s.Versions != "" {
		constraints, err := semver.NewConstraint(s.Versions)
		if err != nil {
			add(p.Child("versions"), "%q is not a semver range like \">= 1.32\": %s", s.Versions, repofile.OneLine(err.Error()))
		}
		out.Versions = constraints
	}
}

func checkOCI(p *field.Path, doc *ociDocument, out *OCISource) []string {
	var problems []string
	add := func(p *field.Path, format string, args ...any) {
		problems = append(problems, p.String()+": "+fmt.Sprintf(format, args...))
	}
	switch {
	case doc.Repository == "":
		add(p.Child("repository"), "required: the OCI repository whose tags are machine image versions, like ghcr.io/gardenlinux/gardenlinux")
	case strings.ContainsAny(doc.Repository, "@ \t") || strings.Contains(path.Base(doc.Repository), ":"):
		add(p.Child("repository"), "%q is not a repository: write it without tag or digest", doc.Repository)
	}
	if c := doc.Credentials; c != nil {
		cp := p.Child("credentials")
		if c.IdentityEnv != "" || c.KnownHostsEnv != "" {
			add(cp, "identityEnv and knownHostsEnv are for a Git source over ssh; a registry takes usernameEnv and passwordEnv")
		}
		if c.SecretName == "" && c.UsernameEnv == "" && c.PasswordEnv == "" {
			add(cp, "required: secretName (for the operator), usernameEnv and passwordEnv (for the CLI), or both")
		}
		out.Credentials = checkCredentialNames(cp, c, add)
		if (c.UsernameEnv == "") != (c.PasswordEnv == "") {
			add(cp, "set usernameEnv and passwordEnv together")
		}
	}
	return problems
}

// Git URL schemes a source may have: scp-like addresses (git@host:path)
// are ssh.
const (
	gitSchemeHTTPS = "https"
	gitSchemeHTTP  = "http"
	gitSchemeSSH   = "ssh"
)

// GitURLScheme is the scheme of a Git source's URL as go-git reads it:
// https, http, ssh (ssh:// or scp-like user@host:path), or another one
// (file, git) that sources do not read.
func GitURLScheme(rawURL string) (string, error) {
	endpoint, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return "", err
	}
	return endpoint.Protocol, nil
}

func checkGit(p *field.Path, doc *gitDocument, out *GitSource) []string {
	var problems []string
	add := func(p *field.Path, format string, args ...any) {
		problems = append(problems, p.String()+": "+fmt.Sprintf(format, args...))
	}
	scheme := ""
	if doc.URL == "" {
		add(p.Child("url"), "required: the Git repository whose tags are Kubernetes versions")
	} else {
		var err error
		scheme, err = GitURLScheme(doc.URL)
		switch {
		case err != nil:
			add(p.Child("url"), "not a Git URL: %s", repofile.OneLine(err.Error()))
		case scheme != gitSchemeHTTPS && scheme != gitSchemeHTTP && scheme != gitSchemeSSH:
			add(p.Child("url"), "a %s URL: sources are read over https, http or ssh (ssh://host/path or user@host:path)", scheme)
		}
	}
	c := doc.Credentials
	if c == nil {
		return problems
	}
	cp := p.Child("credentials")
	if c.SecretName == "" && c.UsernameEnv == "" && c.PasswordEnv == "" && c.IdentityEnv == "" && c.KnownHostsEnv == "" {
		add(cp, "required: secretName (for the operator), the variables the CLI reads, or both")
	}
	switch scheme {
	case gitSchemeSSH:
		if c.UsernameEnv != "" {
			add(cp.Child("usernameEnv"), "an ssh source's user is the URL's (git@host:path); leave usernameEnv out")
		}
		if (c.IdentityEnv == "") != (c.KnownHostsEnv == "") {
			add(cp, "set identityEnv and knownHostsEnv together: the server's host key is always checked")
		}
		if c.PasswordEnv != "" && c.IdentityEnv == "" {
			add(cp.Child("passwordEnv"), "over ssh, passwordEnv is the passphrase of identityEnv's key: set identityEnv too")
		}
	case gitSchemeHTTPS, gitSchemeHTTP:
		if c.IdentityEnv != "" || c.KnownHostsEnv != "" {
			add(cp, "identityEnv and knownHostsEnv are for ssh; an %s source takes usernameEnv and passwordEnv", scheme)
		}
		if c.PasswordEnv != "" && c.UsernameEnv == "" {
			add(cp, "set usernameEnv with passwordEnv")
		}
	}
	out.Credentials = checkCredentialNames(cp, c, add)
	return problems
}

// checkCredentialNames checks the Secret's and the variables' names.
func checkCredentialNames(cp *field.Path, c *credentialsDocument, add func(*field.Path, string, ...any)) *Credentials {
	if c.SecretName != "" {
		if errs := validation.IsDNS1123Subdomain(c.SecretName); len(errs) > 0 {
			add(cp.Child("secretName"), "%q is not a Secret's name: %s", c.SecretName, strings.Join(errs, "; "))
		}
	}
	for _, v := range []struct{ name, value string }{
		{"usernameEnv", c.UsernameEnv}, {"passwordEnv", c.PasswordEnv}, {"identityEnv", c.IdentityEnv}, {"knownHostsEnv", c.KnownHostsEnv},
	} {
		if v.value != "" && !envName.MatchString(v.value) {
			add(cp.Child(v.name), "%q is not an environment variable's name", v.value)
		}
	}
	return &Credentials{SecretName: c.SecretName, UsernameEnv: c.UsernameEnv, PasswordEnv: c.PasswordEnv, IdentityEnv: c.IdentityEnv, KnownHostsEnv: c.KnownHostsEnv}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func checkFeedFile(p *field.Path, file string, add func(*field.Path, string, ...any)) (string, bool) {
	if file == "" {
		add(p, "required: the repository-relative file that holds the CloudProfile")
		return "", false
	}
	if strings.HasPrefix(file, "/") || strings.Contains(file, `\`) {
		add(p, "%q must be relative to the repository root, with forward slashes", file)
		return "", false
	}
	clean := path.Clean(file)
	switch {
	case clean == "." || clean == ".." || strings.HasPrefix(clean, "../"):
		add(p, "%q is not a file inside the repository", file)
		return "", false
	case repofile.InGitMetadata(clean):
		add(p, "%q is in %s/, Git's metadata", file, repofile.GitMetadataDir)
		return "", false
	case path.Ext(clean) != ".yaml" && path.Ext(clean) != ".yml":
		add(p, "%q is not a YAML file (.yaml or .yml)", file)
		return "", false
	}
	return clean, true
}

func feedLabel(f Feed) string {
	if f.MachineImage == "" {
		return "the Kubernetes versions of CloudProfile " + f.CloudProfile
	}
	return "machine image " + f.MachineImage + " of CloudProfile " + f.CloudProfile
}

// formatDays writes d in whole days when it is, as the file's examples do.
func formatDays(d time.Duration) string {
	if d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	return d.String()
}
