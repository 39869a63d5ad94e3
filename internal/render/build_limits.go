package render

import "github.com/profilesync/profilesync/internal/repofile"

// Default limits of a build: those of every reading of a repository
// (repofile).
const (
	DefaultMaxFileSize     = repofile.DefaultMaxFileSize
	DefaultMaxRenderedSize = repofile.DefaultMaxTotalSize
)

// Names of the flags that raise each limit, the same in the manager and the
// CLI, so that a refusal can say how to get past it.
const (
	MaxFileSizeFlag     = repofile.MaxFileSizeFlag
	MaxRenderedSizeFlag = repofile.MaxRenderedSizeFlag
)

// Limits bound what one build may read and produce, so that a commit cannot
// exhaust the memory of the process that builds it. A field left zero takes
// its default.
type Limits struct {
	// MaxFileSize is the largest file a build reads, in bytes. A YAML file
	// counts as large as it is with every alias written out, because that
	// is what kustomize holds in memory.
	MaxFileSize int64
	// MaxRenderedSize bounds both the rendered output and everything the
	// build reads (a file read twice counts twice), in bytes: kustomize's
	// work and memory grow with what it reads, and a build that reads far
	// more than it may render is amplifying something.
	MaxRenderedSize int64
}

// DefaultLimits are the limits the manager and the CLI use unless told
// otherwise.
func DefaultLimits() Limits {
	return Limits{MaxFileSize: DefaultMaxFileSize, MaxRenderedSize: DefaultMaxRenderedSize}
}

// orDefaults returns l with every zero field set to its default.
func (l Limits) orDefaults() Limits {
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	if l.MaxRenderedSize <= 0 {
		l.MaxRenderedSize = DefaultMaxRenderedSize
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
	l = l.orDefaults()
	return repofile.Limits{MaxFileSize: l.MaxFileSize, MaxTotalSize: l.MaxRenderedSize}
}

// expandedYAMLSize is repofile.ExpandedYAMLSize: the build bounds aliases as
// every other reading does.
func expandedYAMLSize(content []byte, max int64) int64 {
	return repofile.ExpandedYAMLSize(content, max)
}
