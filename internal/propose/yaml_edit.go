package propose

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// EditFile makes the edits whose target is file in content, a file of
// YAML documents, in place: the rest of the file (comments, key order,
// quoting, indentation, the other documents) is written back as it was read
// (kyaml, as Flux's image automation edits manifests). Each edit changes
// the entry of its version in the list it names; a new version goes next
// to the version below it. An edit whose object, list or version is not in
// the file is an error naming them.
func EditFile(file string, content []byte, edits []Edit) ([]byte, error) {
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(content), PreserveSeqIndent: true}).Read()
	if err != nil {
		return nil, fmt.Errorf("%s: reading YAML: %w", file, err)
	}
	fileStyle := quotingOf(quoting{startTime: yaml.DoubleQuotedStyle}, nodeList(nodes)...)
	for _, e := range edits {
		if e.Target.File != file {
			continue
		}
		versions, err := versionsNode(nodes, e.Target)
		if err != nil {
			return nil, err
		}
		// The list's own way of quoting wins over the file's.
		if err := editList(versions, e, quotingOf(fileStyle, versions)); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", targetLabel(e.Target), e.Version, err)
		}
	}
	var out bytes.Buffer
	if err := (kio.ByteWriter{Writer: &out}).Write(nodes); err != nil {
		return nil, fmt.Errorf("%s: writing YAML: %w", file, err)
	}
	return out.Bytes(), nil
}

// versionsKey is the field of a list of versions.
const versionsKey = "versions"

// versionsNode finds the sequence of target's versions among the
// documents.
func versionsNode(nodes []*yaml.RNode, target Feed) (*yaml.Node, error) {
	for _, n := range nodes {
		if n.GetKind() != v1alpha1.CloudProfileKind || n.GetName() != target.CloudProfile {
			continue
		}
		path := []string{"spec", "kubernetes", versionsKey}
		if target.MachineImage != "" {
			path = []string{"spec", "machineImages", "[name=" + target.MachineImage + "]", versionsKey}
		}
		list, err := n.Pipe(yaml.Lookup(path...))
		if err != nil || list == nil || list.YNode().Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("%s: no list of versions at %s", targetLabel(target), joinPath(path))
		}
		return list.YNode(), nil
	}
	return nil, fmt.Errorf("%s: no CloudProfile/%s in the file", target.File, target.CloudProfile)
}

func joinPath(path []string) string {
	out := ""
	for i, p := range path {
		if i > 0 && p[0] != '[' {
			out += "."
		}
		out += p
	}
	return out
}

// quoting is how a file writes the scalars an edit writes: the style of
// the first version and of the first startTime found (startTime quoted
// when there is none, as YAML 1.1 would read a plain one as a timestamp).
type quoting struct {
	version, startTime yaml.Style
}

func nodeList(nodes []*yaml.RNode) []*yaml.Node {
	out := make([]*yaml.Node, len(nodes))
	for i, n := range nodes {
		out[i] = n.YNode()
	}
	return out
}

// quotingOf is the quoting of the first version and startTime below
// nodes, each the fallback's when there is none.
func quotingOf(fallback quoting, nodes ...*yaml.Node) quoting {
	q := fallback
	foundVersion, foundStart := false, false
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, value := n.Content[i], n.Content[i+1]
				switch {
				case key.Value == "version" && value.Kind == yaml.ScalarNode && !foundVersion:
					q.version, foundVersion = value.Style, true
				case key.Value == "startTime" && value.Kind == yaml.ScalarNode && !foundStart:
					q.startTime, foundStart = value.Style, true
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return q
}

func editList(versions *yaml.Node, e Edit, q quoting) error {
	i := entryIndex(versions, e.Version)
	switch e.Action {
	case AddVersion:
		if i >= 0 {
			return fmt.Errorf("listed already")
		}
		var entry *yaml.Node
		if e.Template != "" {
			if t := entryIndex(versions, e.Template); t >= 0 {
				entry = yaml.CopyYNode(versions.Content[t])
				clearComments(entry)
			}
		}
		if entry == nil {
			entry = &yaml.Node{Kind: yaml.MappingNode}
		}
		setField(entry, "version", scalar(e.Version, q.version), true)
		setLifecycle(entry, e.Lifecycle, q)
		versions.Content = slices.Insert(versions.Content, insertionPoint(versions, e.Version), entry)
	case SetLifecycle:
		if i < 0 {
			return fmt.Errorf("not listed")
		}
		setLifecycle(versions.Content[i], e.Lifecycle, q)
	case RemoveVersion:
		if i < 0 {
			return fmt.Errorf("not listed")
		}
		removed := versions.Content[i]
		versions.Content = slices.Delete(versions.Content, i, i+1)
		// A comment above the entry speaks of what follows (the minor, the
		// image): it stays, on the entry that now comes first.
		if comment := headComment(removed); comment != "" && i < len(versions.Content) && headComment(versions.Content[i]) == "" {
			setHeadComment(versions.Content[i], comment)
		}
	default:
		return fmt.Errorf("unknown action %q", e.Action)
	}
	return nil
}

// entryIndex is the position of the entry whose version equals version,
// found as lifecycle.IndexOfVersion finds it (the entry written as version
// first, then the same semantic version); -1 when there is none.
func entryIndex(versions *yaml.Node, version string) int {
	written := func(i int) string {
		if v := fieldValue(versions.Content[i], "version"); v != nil {
			return v.Value
		}
		return ""
	}
	return lifecycle.IndexOfVersion(len(versions.Content), written, version)
}

// insertionPoint is where a new version goes among the versions of
// entries (insertionIndex).
func insertionPoint(versions *yaml.Node, version string) int {
	written := make([]string, len(versions.Content))
	for i, entry := range versions.Content {
		if value := fieldValue(entry, "version"); value != nil {
			written[i] = value.Value
		}
	}
	return insertionIndex(written, version)
}

// setLifecycle writes stages as entry's lifecycle, changing the stages it
// has in place (a start time set, added or dropped), adding the ones it
// lacks in rank order and removing the others, and dropping the deprecated
// classification and expirationDate, which a lifecycle replaces.
func setLifecycle(entry *yaml.Node, stages []v1alpha1.LifecycleStage, q quoting) {
	removeField(entry, "classification")
	removeField(entry, "expirationDate")
	list := fieldValue(entry, "lifecycle")
	if list == nil || list.Kind != yaml.SequenceNode {
		list = &yaml.Node{Kind: yaml.SequenceNode}
		setField(entry, "lifecycle", list, false)
	}
	existing := map[v1alpha1.VersionClassification]*yaml.Node{}
	for _, s := range list.Content {
		if c := fieldValue(s, "classification"); c != nil {
			existing[v1alpha1.VersionClassification(c.Value)] = s
		}
	}
	content := make([]*yaml.Node, 0, len(stages))
	for _, s := range stages {
		node, ok := existing[s.Classification]
		if !ok {
			node = &yaml.Node{Kind: yaml.MappingNode}
			setField(node, "classification", scalar(string(s.Classification), 0), false)
		}
		if s.StartTime == nil {
			removeField(node, "startTime")
		} else if current := fieldValue(node, "startTime"); current == nil || !sameTime(current.Value, s.StartTime.Time) {
			setField(node, "startTime", scalar(s.StartTime.UTC().Format(time.RFC3339), q.startTime), false)
		}
		content = append(content, node)
	}
	// Comments on stages that go stay with the stage list's remaining ones.
	slices.SortStableFunc(content, func(a, b *yaml.Node) int {
		return lifecycle.Rank(classificationOf(a)) - lifecycle.Rank(classificationOf(b))
	})
	list.Content = content
}

func classificationOf(stage *yaml.Node) v1alpha1.VersionClassification {
	if c := fieldValue(stage, "classification"); c != nil {
		return v1alpha1.VersionClassification(c.Value)
	}
	return ""
}

func sameTime(written string, t time.Time) bool {
	parsed, err := time.Parse(time.RFC3339, written)
	return err == nil && parsed.Equal(t)
}

// scalar is a string scalar written in style; the encoder quotes a plain
// one that YAML would read as something else (1592.2, a number).
func scalar(value string, style yaml.Style) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Style: style}
	if style == 0 && !plainIsString(value) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// plainIsString reports whether value written plain reads back as a
// string in YAML 1.1 and 1.2 alike.
func plainIsString(value string) bool {
	var decoded any
	if err := yaml.Unmarshal([]byte(value), &decoded); err != nil {
		return false
	}
	s, ok := decoded.(string)
	if !ok || s != value {
		return false
	}
	if _, err := time.Parse(time.RFC3339, value); err == nil {
		return false
	}
	return true
}

func fieldValue(mapping *yaml.Node, name string) *yaml.Node {
	if mapping == nil || mapping.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		if mapping.Content[i].Value == name {
			return mapping.Content[i+1]
		}
	}
	return nil
}

// setField sets name to value, in place when the field exists (its key and
// comments kept), else appended (first when first is set).
func setField(mapping *yaml.Node, name string, value *yaml.Node, first bool) {
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		if mapping.Content[i].Value == name {
			old := mapping.Content[i+1]
			value.LineComment, value.HeadComment, value.FootComment = old.LineComment, old.HeadComment, old.FootComment
			if old.Kind == yaml.ScalarNode && value.Kind == yaml.ScalarNode && old.Style != 0 {
				value.Style = old.Style
			}
			mapping.Content[i+1] = value
			return
		}
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}
	if first {
		mapping.Content = append([]*yaml.Node{key, value}, mapping.Content...)
		return
	}
	mapping.Content = append(mapping.Content, key, value)
}

func removeField(mapping *yaml.Node, name string) {
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		if mapping.Content[i].Value == name {
			mapping.Content = slices.Delete(mapping.Content, i, i+2)
			return
		}
	}
}

// headComment is the comment above a sequence entry, which the parser
// keeps on the entry or on its first key.
func headComment(entry *yaml.Node) string {
	if entry.HeadComment != "" {
		return entry.HeadComment
	}
	if entry.Kind == yaml.MappingNode && len(entry.Content) > 0 {
		return entry.Content[0].HeadComment
	}
	return ""
}

func setHeadComment(entry *yaml.Node, comment string) {
	entry.HeadComment = comment
}

// clearComments removes every comment of a copied entry: they described
// the version it was copied from.
func clearComments(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		clearComments(c)
	}
}
