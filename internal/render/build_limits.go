package render

import (
	"bytes"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Default limits of a build. They leave room for ten times the largest
// landscape we know of (10 CloudProfiles of 600 versions and 100 namespaced
// profiles render to about 2.3 MB) while keeping a hostile commit far below
// what the operator's memory holds.
const (
	DefaultMaxFileSize     int64 = 4 << 20
	DefaultMaxRenderedSize int64 = 32 << 20
)

// DefaultMaxObjects is the default of Limits.MaxObjects. kustomize's time
// grows with the square of the objects it accumulates (docs/performance.md
// has the curve, from make bench): this many build in about 11 s on one
// core, well inside the default spec.timeout of a minute, and it is still
// five times the objects of a landscape of a thousand projects, each with
// its own namespaced profile.
const DefaultMaxObjects = 5000

// Names of the flags that raise each limit, the same in the manager and the
// CLI, so that a refusal can say how to get past it.
const (
	MaxFileSizeFlag     = "max-file-size"
	MaxRenderedSizeFlag = "max-rendered-size"
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
	// MaxRenderedSize bounds both the rendered output and everything the
	// build reads (a file read twice counts twice), in bytes: kustomize's
	// work and memory grow with what it reads, and a build that reads far
	// more than it may render is amplifying something.
	MaxRenderedSize int64
	// MaxObjects bounds the YAML documents a build reads, counting each
	// item of a List, in all the files it reads (a file read twice counts
	// twice). They are counted before kustomize sees them: its time grows
	// with their square, not with their size.
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
// going past one of its Limits.
var ErrLimitExceeded = errors.New("build limit exceeded")

// LimitError is a build refused for going past one of its limits.
type LimitError struct {
	// File is the repository-relative file that went past the limit, or the
	// build path for the rendered output.
	File string
	// What is the limit in words: "maximum file size".
	What string
	// Flag raises the limit, without dashes.
	Flag string
	// Max is the limit and Size what the build reached, in bytes; Size is
	// zero when the build stopped counting as soon as it passed Max.
	Max, Size int64
	// Objects says that Max and Size count objects, not bytes.
	Objects bool `json:",omitempty"`
}

func (e *LimitError) Error() string {
	if e.Objects {
		return fmt.Sprintf("%s: %d objects read in all are over the %s of %d (raise it with --%s)", e.File, e.Size, e.What, e.Max, e.Flag)
	}
	if e.Size == 0 {
		return fmt.Sprintf("%s: exceeds the %s of %s (raise it with --%s)", e.File, e.What, formatBytes(e.Max), e.Flag)
	}
	size, max := formatBytes(e.Size), formatBytes(e.Max)
	if size == max {
		// Rounding hid the difference.
		size, max = fmt.Sprintf("%d bytes", e.Size), fmt.Sprintf("%d bytes", e.Max)
	}
	return fmt.Sprintf("%s: %s is over the %s of %s (raise it with --%s)", e.File, size, e.What, max, e.Flag)
}

// Is makes errors.Is(err, ErrLimitExceeded) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimitExceeded }

// formatBytes writes a size the way the flags' documentation does.
func formatBytes(n int64) string {
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
		if len(document.Content) == 0 || document.Content[0].Kind != yaml.MappingNode {
			if len(document.Content) > 0 && document.Content[0].Tag != "!!null" {
				count++
			}
			continue
		}
		count += objectsOf(document.Content[0])
	}
}

// objectsOf is 1 for an object, and the number of items for a List.
func objectsOf(object *yaml.Node) int64 {
	var kind, items *yaml.Node
	for i := 0; i+1 < len(object.Content); i += 2 {
		switch object.Content[i].Value {
		case "kind":
			kind = object.Content[i+1]
		case "items":
			items = object.Content[i+1]
		}
	}
	if kind != nil && kind.Value == "List" && items != nil && items.Kind == yaml.SequenceNode {
		return int64(len(items.Content))
	}
	return 1
}

// expandedYAMLSize is how large content would be with every YAML alias
// written out, stopping as soon as it passes max (the result is then only a
// lower bound). kustomize's YAML library copies an aliased node for every
// alias, so a few hundred bytes of nested aliases ("billion laughs") become
// gigabytes in memory; measuring first lets such a file be refused like any
// other file that is too large. Content that does not parse is left to
// kustomize, which reports it with the file's name.
//
// Every node counts its scalar value plus two bytes, about what it takes
// written out as a flow sequence item; an alias counts what its anchor
// expands to, computed once per anchor.
func expandedYAMLSize(content []byte, max int64) int64 {
	decoder := yaml.NewDecoder(bytes.NewReader(content))
	measure := expansionMeasure{max: max, anchors: make(map[*yaml.Node]int64), open: make(map[*yaml.Node]bool)}
	for measure.total <= max {
		var document yaml.Node
		if err := decoder.Decode(&document); err != nil {
			break // io.EOF, or content kustomize will report
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
