package repofile

import (
	"bytes"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Names of the flags that raise each limit, the same in the manager and every
// command, so that a refusal can say how to get past it.
const (
	MaxFileSizeFlag     = "max-file-size"
	MaxRenderedSizeFlag = "max-rendered-size"
)

// Limits bound what one reading of a repository takes in.
type Limits struct {
	// MaxFileSize is the largest file read, in bytes. A YAML file counts as
	// large as it is with every alias written out, because that is what a
	// YAML library holds in memory once it has read it.
	MaxFileSize int64
	// MaxTotalSize bounds everything read, in bytes; a file read twice counts
	// twice. It is the flag MaxRenderedSizeFlag: the build bounds what it
	// reads and what it renders with the same number.
	MaxTotalSize int64
}

// ErrLimitExceeded is matched (errors.Is) by every refusal for going past a
// limit.
var ErrLimitExceeded = errors.New("build limit exceeded")

// LimitError is a file or a whole reading refused for going past a limit.
type LimitError struct {
	// File is the repository-relative file that went past the limit, or the
	// build path for a build's rendered output.
	File string
	// What is the limit in words: "maximum file size".
	What string
	// Flag raises the limit, without dashes.
	Flag string
	// Max is the limit and Size what was reached, in bytes; Size is zero
	// when counting stopped as soon as it passed Max.
	Max, Size int64
	// Objects says that Max and Size count objects, not bytes.
	Objects bool `json:",omitempty"`
}

func (e *LimitError) Error() string {
	if e.Objects {
		return fmt.Sprintf("%s: %d objects read in all are over the %s of %d (raise it with --%s)", e.File, e.Size, e.What, e.Max, e.Flag)
	}
	if e.Size == 0 {
		return fmt.Sprintf("%s: exceeds the %s of %s (raise it with --%s)", e.File, e.What, FormatBytes(e.Max), e.Flag)
	}
	size, max := FormatBytes(e.Size), FormatBytes(e.Max)
	if size == max {
		// Rounding hid the difference.
		size, max = fmt.Sprintf("%d bytes", e.Size), fmt.Sprintf("%d bytes", e.Max)
	}
	return fmt.Sprintf("%s: %s is over the %s of %s (raise it with --%s)", e.File, size, e.What, max, e.Flag)
}

// Is makes errors.Is(err, ErrLimitExceeded) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimitExceeded }

// FormatBytes writes a size the way the flags' documentation does.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

// ExpandedYAMLSize is how large content would be with every YAML alias
// written out, stopping as soon as it passes max (the result is then only a
// lower bound). A YAML library copies an aliased node for every alias, so a
// few hundred bytes of nested aliases ("billion laughs") become gigabytes in
// memory; measuring first lets such a file be refused like any other file
// that is too large. Content that does not parse is left to the decoder,
// which reports it with the file's name.
//
// Every node counts its scalar value plus two bytes, about what it takes
// written out as a flow sequence item; an alias counts what its anchor
// expands to, computed once per anchor.
func ExpandedYAMLSize(content []byte, max int64) int64 {
	decoder := yaml.NewDecoder(bytes.NewReader(content))
	measure := expansionMeasure{max: max, anchors: make(map[*yaml.Node]int64), open: make(map[*yaml.Node]bool)}
	for measure.total <= max {
		var document yaml.Node
		if err := decoder.Decode(&document); err != nil {
			break // io.EOF, or content the decoder will report
		}
		measure.total += measure.size(&document)
	}
	return measure.total
}

type expansionMeasure struct {
	max, total int64
	// anchors holds the expanded size of each anchored node already measured.
	anchors map[*yaml.Node]int64
	// open holds the nodes being measured: an alias to one of them is a
	// node that contains itself, infinite when written out.
	open map[*yaml.Node]bool
}

func (m *expansionMeasure) size(node *yaml.Node) int64 {
	if node.Kind == yaml.AliasNode {
		if node.Alias == nil {
			return 0
		}
		return m.size(node.Alias)
	}
	if size, ok := m.anchors[node]; ok {
		return size
	}
	if m.open[node] {
		return m.max + 1
	}
	m.open[node] = true
	defer delete(m.open, node)
	size := int64(len(node.Value)) + 2
	for _, child := range node.Content {
		size += m.size(child)
		if size > m.max {
			break // no need to know by how much
		}
	}
	if node.Anchor != "" {
		m.anchors[node] = size
	}
	return size
}
