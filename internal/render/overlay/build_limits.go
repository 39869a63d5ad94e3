package overlay

import (
	"bytes"

	"go.yaml.in/yaml/v3"

	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
)

// Default limits of a build: those of every reading of a repository
// (repofile).
const (
	DefaultMaxFileSize     = repofile.DefaultMaxFileSize
	DefaultMaxRenderedSize = repofile.DefaultMaxTotalSize
)

// DefaultMaxObjects is the default of Limits.MaxObjects. A kustomization
// that patches, generates or transforms goes through kustomize, whose time
// grows with the square of the objects it accumulates; measured on one core
// (docs/performance.md, BenchmarkBuildOrdinaryProfiles), this many small
// CloudProfiles build in about 25 s of CPU through kustomize, within half
// the default spec.timeout, and plain resource lists, which take the linear
// path, in a few seconds. It is still three times the objects of the
// issue-7 landscape (100 CloudProfiles, 1,000 NamespacedCloudProfiles).
const DefaultMaxObjects = 1100

// Names of the flags that raise each limit, the same in the manager and the
// CLI, so that a refusal can say how to get past it.
const (
	MaxFileSizeFlag     = repofile.MaxFileSizeFlag
	MaxRenderedSizeFlag = repofile.MaxRenderedSizeFlag
	MaxObjectsFlag      = "max-objects"
)

// Limits bound what one build may read and produce, so that a commit cannot
// exhaust the memory of the process that builds it. A field left zero takes
// its default.
type Limits struct {
	// MaxFileSize is the largest file a build reads, in bytes. A YAML file
	// counts as large as it is with every alias written out, because that
	// is what kustomize holds in memory.
	MaxFileSize int64
	// MaxRenderedSize bounds both the rendered output (the objects as
	// JSON, as renderJSON writes them) and everything the build reads (a file read twice counts twice), in bytes: kustomize's
	// work and memory grow with what it reads, and a build that reads far
	// more than it may render is amplifying something.
	MaxRenderedSize int64
	// MaxObjects bounds the YAML documents a build reads, counting each
	// item of a List, in all the files it reads (a file read twice counts
	// twice). The resource files are read and counted before kustomize runs
	// (planResources): its time grows with their square, not with their
	// size, so a build of too many is refused before kustomize accumulates
	// any.
	MaxObjects int64
}

// DefaultLimits are the limits the manager and the CLI use unless told
// otherwise.
func DefaultLimits() Limits {
	return Limits{MaxFileSize: DefaultMaxFileSize, MaxRenderedSize: DefaultMaxRenderedSize, MaxObjects: DefaultMaxObjects}
}

// OrDefaults returns l with every zero field set to its default.
func (l Limits) OrDefaults() Limits {
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	if l.MaxRenderedSize <= 0 {
		l.MaxRenderedSize = DefaultMaxRenderedSize
	}
	if l.MaxObjects <= 0 {
		l.MaxObjects = DefaultMaxObjects
	}
	return l
}

// ErrLimitExceeded is matched (errors.Is) by every refusal of a build for
// going past one of its Limits, and of any other reading of the repository.
var ErrLimitExceeded = repofile.ErrLimitExceeded

// LimitError is a build refused for going past one of its limits.
type LimitError = repofile.LimitError

// ReaderLimits are the limits of a reading of the repository outside the
// build (profiles, policy), the same as the build's.
func (l Limits) ReaderLimits() repofile.Limits {
	l = l.OrDefaults()
	return repofile.Limits{MaxFileSize: l.MaxFileSize, MaxTotalSize: l.MaxRenderedSize}
}

// expandedYAMLSize is repofile.ExpandedYAMLSize: the build bounds aliases as
// every other reading does.
func expandedYAMLSize(content []byte, max int64) int64 {
	return repofile.ExpandedYAMLSize(content, max)
}

// countObjects is how many objects kustomize makes of a YAML file: one per
// document that is not empty, and for a List one per item. It parses the
// file once, which takes time linear in its size; kustomize's accumulation
// of the same objects takes time in their square.
func countObjects(content []byte) int64 {
	decoder := yaml.NewDecoder(bytes.NewReader(content))
	var count int64
	for {
		var document yaml.Node
		if err := decoder.Decode(&document); err != nil {
			return count // io.EOF, or content kustomize will report
		}
		count += profile.DocumentObjects(&document)
	}
}
