package rollout

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/repofile"
)

// FileName is the name of the rollout file. It sits at the repository root:
// there is one rollout per repository. It holds no profiles, so reading a
// directory of YAML files skips it (overlay.IsSettingsFile).
const FileName = "profilesync-rollout.yaml"

// IsFileName reports whether name, a file's base name, is the rollout file.
func IsFileName(name string) bool { return name == FileName }

// APIVersion and Kind identify the rollout file's schema.
const (
	APIVersion = "rollout.profilesync.io/v1alpha1"
	Kind       = "Rollout"
)

// Bounds of the file. A soak or a lag longer than MaxSoak and MaxLag is a
// typo (a missing unit, a 0 too many), not a plan: a commit that waits a
// quarter in dev before prod takes it has stopped rolling out.
const (
	MaxSoak       = 90 * 24 * time.Hour
	MaxLag        = 365 * 24 * time.Hour
	MaxLandscapes = 100
)

// LagClassifications are the classifications a lag may be set for: the
// stages a version enters after it is listed.
var LagClassifications = []v1alpha1.VersionClassification{
	v1alpha1.ClassificationPreview, v1alpha1.ClassificationSupported,
	v1alpha1.ClassificationDeprecated, v1alpha1.ClassificationExpired,
}

// File is a decoded and checked rollout file.
type File struct {
	// Landscapes are in the order the file lists them.
	Landscapes []Landscape
}

// Landscape is one landscape of the rollout.
type Landscape struct {
	// Name is a DNS label, unique in the file.
	Name string
	// Path is the overlay's directory relative to the repository root,
	// cleaned ("overlays/dev"), unique in the file.
	Path string
	// After names the upstream landscapes: each must hold a commit before
	// this one takes it.
	After []string
	// Soak is how long the upstream landscapes must have held a commit,
	// Ready, before this one takes it; zero when the file leaves it out.
	Soak time.Duration
	// Lag is, per classification, how long after the same stage of a
	// version in each upstream landscape that stage may start here.
	Lag map[v1alpha1.VersionClassification]Lag
}

// Lag is how far behind its upstream a landscape's stage must start.
type Lag struct {
	// Duration is added to the upstream's start of the stage.
	Duration time.Duration
	// Severity says whether a stage that starts earlier refuses the change
	// (error) or is only reported (warning).
	Severity repofile.Severity
}

// document is the file as written.
type document struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Landscapes []landscapeDocument `json:"landscapes"`
}

type landscapeDocument struct {
	Name  string                 `json:"name"`
	Path  string                 `json:"path"`
	After []string               `json:"after,omitempty"`
	Soak  string                 `json:"soak,omitempty"`
	Lag   map[string]lagDocument `json:"lag,omitempty"`
}

type lagDocument struct {
	Duration string            `json:"duration"`
	Severity repofile.Severity `json:"severity"`
}

// DecodeError is everything wrong with a rollout file, one problem per line,
// each naming the file and, where it is known, the field.
type DecodeError = repofile.DecodeError

// settingsFile is the rollout file as repofile.DecodeSettings names it.
var settingsFile = repofile.SettingsFile{Kind: "rollout", Shape: "a mapping with apiVersion, kind and landscapes", Docs: "docs/rollout.md"}

// Decode reads a rollout file strictly: unknown and duplicate fields and
// values of the wrong type are refused, and so is a rollout that cannot be
// followed (see check), every problem at once, as a *DecodeError naming
// file (as given) and field.
func Decode(file string, data []byte) (*File, error) {
	fail := func(problems ...string) (*File, error) {
		return nil, &DecodeError{File: file, Problems: problems}
	}
	var doc document
	if problems, _ := settingsFile.DecodeSettings(data, &doc); len(problems) > 0 {
		return fail(problems...)
	}
	f, problems := doc.check()
	if len(problems) > 0 {
		return fail(problems...)
	}
	return f, nil
}

// Read reads the rollout file at the root of the repository reader reads, as
// every file of the repository is read (repofile: inside the root, never
// through a link that leaves it, within the reader's limits). It returns
// nil and no error when the repository has no rollout file.
func Read(reader *repofile.Reader) (*File, error) {
	data, err := reader.ReadFile(FileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the rollout: %w", err)
	}
	return Decode(FileName, data)
}

// ReadAt is Read of the repository at root, each file and the whole reading
// bounded by maxSize bytes (the default maximum file size when 0).
func ReadAt(root string, maxSize int64) (*File, error) {
	reader, err := repofile.Open(root, repofile.Limits{MaxFileSize: maxSize, MaxTotalSize: maxSize})
	if err != nil {
		return nil, fmt.Errorf("looking for %s: %w", FileName, err)
	}
	return Read(reader)
}

// check turns the document into a File, or says everything that makes it
// one that cannot be followed: a bad header, a landscape without a valid
// name or path, two landscapes with one name or one path, an unknown or
// repeated upstream, a cycle of upstreams, a soak or lag that is negative
// or over its bound, a lag for a classification that has no stage, a
// severity other than warning or error.
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
	landscapesPath := field.NewPath("landscapes")
	switch {
	case len(d.Landscapes) == 0:
		add(landscapesPath, "a rollout lists at least one landscape")
	case len(d.Landscapes) > MaxLandscapes:
		add(landscapesPath, "%d landscapes are more than the %d a rollout may list", len(d.Landscapes), MaxLandscapes)
		return nil, problems
	}
	f := &File{Landscapes: make([]Landscape, len(d.Landscapes))}
	names := make(map[string]int, len(d.Landscapes))
	paths := make(map[string]int, len(d.Landscapes))
	for i, l := range d.Landscapes {
		p := landscapesPath.Index(i)
		out := &f.Landscapes[i]
		out.Name = l.Name
		switch errs := validation.IsDNS1123Label(l.Name); {
		case l.Name == "":
			add(p.Child("name"), "required: every landscape has a name")
		case len(errs) > 0:
			add(p.Child("name"), "%q is not a valid name: %s", l.Name, strings.Join(errs, "; "))
		default:
			if first, seen := names[l.Name]; seen {
				add(p.Child("name"), "duplicate name %q: landscapes[%d] has it too", l.Name, first)
			} else {
				names[l.Name] = i
			}
		}
		if clean, err := CleanPath(l.Path); err != nil {
			add(p.Child("path"), "%v", err)
		} else {
			out.Path = clean
			if first, seen := paths[clean]; seen {
				add(p.Child("path"), "%q is the path of landscapes[%d] (%s) too: a landscape has an overlay of its own", l.Path, first, d.Landscapes[first].Name)
			} else {
				paths[clean] = i
			}
		}
		if l.Soak != "" {
			soak, err := ParseDuration(l.Soak)
			switch {
			case err != nil:
				add(p.Child("soak"), "%q is not a duration like 1h, 30m or 2d", l.Soak)
			case soak < 0:
				add(p.Child("soak"), "%s is negative", l.Soak)
			case soak > MaxSoak:
				add(p.Child("soak"), "%s is longer than the most a rollout waits, %s (90d)", l.Soak, MaxSoak)
			default:
				out.Soak = soak
			}
		}
		problems = append(problems, checkLags(p.Child("lag"), l.Lag, out)...)
	}
	for i, l := range d.Landscapes {
		p := landscapesPath.Index(i).Child("after")
		for j, upstream := range l.After {
			switch _, known := names[upstream]; {
			case !known:
				add(p.Index(j), "unknown landscape %q (the landscapes are %s)", upstream, knownNames(d.Landscapes))
			case slices.Contains(l.After[:j], upstream):
				add(p.Index(j), "%q is listed twice", upstream)
			default:
				f.Landscapes[i].After = append(f.Landscapes[i].After, upstream)
			}
		}
	}
	if cycle := findCycle(f.Landscapes, names); cycle != nil {
		add(landscapesPath.Index(names[cycle[0]]).Child("after"), "a cycle: %s each wait for the next, so none can take a commit", strings.Join(cycle, " → "))
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return f, nil
}

func checkLags(p *field.Path, lags map[string]lagDocument, out *Landscape) []string {
	var problems []string
	add := func(p *field.Path, format string, args ...any) {
		problems = append(problems, p.String()+": "+fmt.Sprintf(format, args...))
	}
	keys := make([]string, 0, len(lags))
	for k := range lags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		lag, kp := lags[key], p.Key(key)
		classification := v1alpha1.VersionClassification(key)
		if !slices.Contains(LagClassifications, classification) {
			add(kp, "no such classification: a lag is set for %s", joinClassifications())
			continue
		}
		duration, err := ParseDuration(lag.Duration)
		switch {
		case lag.Duration == "":
			add(kp.Child("duration"), "required: how long after the upstream's stage this one may start, like 7d")
		case err != nil:
			add(kp.Child("duration"), "%q is not a duration like 1h, 30m or 7d", lag.Duration)
		case duration < 0:
			add(kp.Child("duration"), "%s is negative", lag.Duration)
		case duration > MaxLag:
			add(kp.Child("duration"), "%s is longer than the longest lag, %s (365d)", lag.Duration, MaxLag)
		}
		switch lag.Severity {
		case repofile.SeverityWarning, repofile.SeverityError:
		case "":
			add(kp.Child("severity"), "required: warning or error")
		default:
			add(kp.Child("severity"), "%q is not a severity: warning or error", lag.Severity)
		}
		if out.Lag == nil {
			out.Lag = map[v1alpha1.VersionClassification]Lag{}
		}
		out.Lag[classification] = Lag{Duration: duration, Severity: lag.Severity}
	}
	return problems
}

func joinClassifications() string {
	names := make([]string, len(LagClassifications))
	for i, c := range LagClassifications {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

func knownNames(landscapes []landscapeDocument) string {
	names := make([]string, len(landscapes))
	for i, l := range landscapes {
		names[i] = l.Name
	}
	return strings.Join(names, ", ")
}

// findCycle returns the names of a cycle of upstreams, starting and ending
// with the same landscape, the one listed first among them; nil when there
// is none.
func findCycle(landscapes []Landscape, index map[string]int) []string {
	const (
		unvisited = iota
		open
		done
	)
	state := make([]int, len(landscapes))
	var stack []int
	var visit func(i int) []string
	visit = func(i int) []string {
		state[i] = open
		stack = append(stack, i)
		for _, upstream := range landscapes[i].After {
			j := index[upstream]
			switch state[j] {
			case open:
				start := slices.Index(stack, j)
				cycle := make([]string, 0, len(stack)-start+1)
				for _, k := range stack[start:] {
					cycle = append(cycle, landscapes[k].Name)
				}
				return append(cycle, landscapes[j].Name)
			case unvisited:
				if cycle := visit(j); cycle != nil {
					return cycle
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
		return nil
	}
	for i := range landscapes {
		if state[i] == unvisited {
			if cycle := visit(i); cycle != nil {
				return cycle
			}
		}
	}
	return nil
}

// CleanPath returns an overlay's directory as the file and a ProfileSync's
// spec.path write it ("./overlays/dev/") in one form ("overlays/dev"; "."
// for the root), refusing a path that is absolute, leaves the repository or
// is in .git/ (at any depth, as repofile refuses to read there).
func CleanPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("required: the overlay's directory, relative to the repository root")
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, `\`) {
		return "", fmt.Errorf("%q must be relative to the repository root, with forward slashes", p)
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q leaves the repository", p)
	}
	if repofile.InGitMetadata(clean) {
		return "", fmt.Errorf("%q is in %s/, Git's metadata, which holds no overlay", p, repofile.GitMetadataDir)
	}
	return clean, nil
}

// ParseDuration reads a duration written as Go writes durations, or with a
// leading number of days: 30m, 2d, 1d12h.
func ParseDuration(value string) (time.Duration, error) {
	days, rest, found := strings.Cut(value, "d")
	if !found {
		return time.ParseDuration(value)
	}
	n, err := strconv.ParseUint(days, 10, 32)
	if err != nil || n > uint64(math.MaxInt64/(24*time.Hour)) {
		return 0, fmt.Errorf("invalid number of days %q", days)
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest == "" {
		return d, nil
	}
	more, err := time.ParseDuration(rest)
	if err != nil || more < 0 || d > math.MaxInt64-more {
		return 0, fmt.Errorf("invalid duration %q", rest)
	}
	return d + more, nil
}

// ErrUnknownLandscape is matched (errors.Is) when a ProfileSync names a
// landscape the rollout does not list.
var ErrUnknownLandscape = errors.New("unknown landscape")

// Landscape returns the landscape named name, or nil.
func (f *File) Landscape(name string) *Landscape {
	if f == nil {
		return nil
	}
	for i := range f.Landscapes {
		if f.Landscapes[i].Name == name {
			return &f.Landscapes[i]
		}
	}
	return nil
}

// LandscapeFor returns the landscape a ProfileSync belongs to: the one named
// explicitName (its spec.landscape) when that is set, else the one whose
// path is specPath (its spec.path), both cleaned. It returns nil and no
// error when no landscape has that path, or f is nil (no rollout file): the
// ProfileSync is in no landscape. An explicit name the file does not list
// is an error matching ErrUnknownLandscape.
func (f *File) LandscapeFor(specPath, explicitName string) (*Landscape, error) {
	if explicitName != "" {
		if l := f.Landscape(explicitName); l != nil {
			return l, nil
		}
		if f == nil {
			return nil, fmt.Errorf("%w %q: the repository has no %s", ErrUnknownLandscape, explicitName, FileName)
		}
		return nil, fmt.Errorf("%w %q: %s lists %s", ErrUnknownLandscape, explicitName, FileName, f.names())
	}
	// A path outside the repository is in no landscape; the sync refuses it.
	if clean, err := CleanPath(specPath); err == nil && f != nil {
		for i := range f.Landscapes {
			if f.Landscapes[i].Path == clean {
				return &f.Landscapes[i], nil
			}
		}
	}
	return nil, nil
}

// LandscapeAt returns the landscape whose overlay is overlay (relative to
// the repository root), or nil.
func (f *File) LandscapeAt(overlay string) *Landscape {
	l, _ := f.LandscapeFor(overlay, "")
	return l
}

func (f *File) names() string {
	names := make([]string, len(f.Landscapes))
	for i, l := range f.Landscapes {
		names[i] = l.Name
	}
	return strings.Join(names, ", ")
}
