package overlay

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync/atomic"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/profilesync/profilesync/internal/render/profile"
)

// parsedResourceFile is a resource file parsed once, as kustomize's reader
// (kio.ByteReader) parses it: split into pieces at its document separators,
// and the first document of each piece parsed on its own. The planning of
// a build parses it so for the typing check and the count of its objects
// (checkAndCountResourceFile), and the linear path makes its objects of the
// same documents (readObjects) instead of parsing the file a second time.
type parsedResourceFile struct {
	// documents has one entry for each piece: the document parsed from
	// it, nil when the piece has none (only blanks and comments).
	documents []*yaml.Node
	// pieces are each piece's digest and object count, for the next
	// build's reuse of the documents a push did not change (BuildReusing).
	pieces []pieceRead
}

// pieceRead is a piece of a resource file as the planning read it: the
// SHA-256 of its text and what the typing check counted of it; reused is
// the previous build's piece of the same text, when the planning took it
// (checkAndCountReusingPieces), and its document was not parsed.
type pieceRead struct {
	digest  [32]byte
	objects int64
	reused  *ReusablePiece
}

// maxHeldParseSource bounds the size of the files whose parses a build
// holds from its planning until the linear path takes them. A parse takes
// about fourteen times the file's text (26 MiB for the 1.9 MB of the bench
// landscape's resource files), and where the linear path parsed one file
// at a time, it now holds them all at its start: without a bound, a build
// of the most the default --max-rendered-size reads (32 MiB) would hold
// some 450 MiB of parses, and could be refused past its memory limit where
// it passed before. 4 MiB holds the bench landscape whole and at most some
// 55 MiB; the files read past it are parsed twice, as before.
const maxHeldParseSource = 4 << 20

// resourceFileParses counts the parses of resource files' text by the
// build (the typing check's and the reading of their objects): what tells
// TestALinearBuildParsesEachResourceFileOnce that each file is parsed once.
var resourceFileParses atomic.Int64

// kustomizeDocumentSeparator is the separator of kio.ByteReader's
// splitDocuments, which is not exported: a line starting with "---", which
// the reader accepts when nothing but blanks and a comment follows.
var kustomizeDocumentSeparator = regexp.MustCompile(`\n---.*\n`)

// checkAndCountResourceFile is profile.CheckYAMLTypingAndCount for a
// resource file, with the parse kept for its objects when the file is one
// whose documents both parses read alike (see parseOnce); parsed is nil
// otherwise, and the file was parsed as the typing check alone parses it.
func checkAndCountResourceFile(file string, content []byte) (problems profile.Problems, objects int64, parsed *parsedResourceFile, err error) {
	if problem, ok := profile.CheckYAMLText(file, content); !ok {
		return profile.Problems{problem}, 0, nil, nil
	}
	resourceFileParses.Add(1)
	if parsed, ok := parseOnce(content); ok {
		problems, objects := profile.CheckDocumentsTypingAndCount(file, parsed.checked())
		return problems, objects, parsed, nil
	}
	problems, objects, err = profile.CheckYAMLTypingAndCount(file, content)
	return problems, objects, nil, err
}

// checked are the documents of the file, as the typing check reads them.
func (p *parsedResourceFile) checked() []*yaml.Node {
	documents := make([]*yaml.Node, 0, len(p.documents))
	for _, document := range p.documents {
		if document != nil {
			documents = append(documents, document)
		}
	}
	return documents
}

// parseOnce parses content as kustomize's reader does, and reports whether
// those documents are also the ones the typing check's single decoder of
// the whole file reads (but for their lines, which no message of the
// typing check names): when the file is made of plain documents separated
// by "---" lines. It is not (ok is false, and the typing check parses the
// file itself, as it always did) when the file has what the two parsers
// cut or read differently:
//
//   - a byte order mark, a carriage return (kustomize's reader turns
//     "\r\n" into "\n" first) or a line break YAML has and the splitter
//     has not (U+0085, U+2028, U+2029);
//   - a line starting with "%" (a directive, which holds for the rest of
//     the stream in one parse and for its piece in the other) or "..." (an
//     end of document, where the splitter does not cut);
//   - a line starting with "---" followed by anything but blanks and a
//     comment after a blank (YAML reads "---#" or "--- x" otherwise than
//     the splitter);
//   - a separator the splitter refuses, a piece that does not parse (the
//     error is the typing check's to report, in its words and lines), or a
//     piece with more than one document (kustomize's reader keeps the
//     first only).
func parseOnce(content []byte) (*parsedResourceFile, bool) {
	if !plainDocuments(content) {
		return nil, false
	}
	pieces, ok := splitAsKustomizesReader(string(content))
	if !ok {
		return nil, false
	}
	parsed := &parsedResourceFile{documents: make([]*yaml.Node, len(pieces)), pieces: make([]pieceRead, len(pieces))}
	for i, piece := range pieces {
		document, ok := parsePiece(piece)
		if !ok {
			return nil, false
		}
		parsed.documents[i] = document
		parsed.pieces[i] = pieceRead{digest: sha256.Sum256([]byte(piece)), objects: pieceObjects(document)}
	}
	return parsed, true
}

// parsePiece parses one piece as parseOnce does: nil for a piece without
// a document, ok false for one that does not parse or holds more than
// one document.
func parsePiece(piece string) (document *yaml.Node, ok bool) {
	resourceDocumentParses.Add(1)
	decoder := yaml.NewDecoder(strings.NewReader(piece))
	document = &yaml.Node{}
	if err := decoder.Decode(document); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true
		}
		return nil, false
	}
	if err := decoder.Decode(&yaml.Node{}); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return document, true
}

// pieceObjects is what the typing check counts of a piece's document.
func pieceObjects(document *yaml.Node) int64 {
	if document == nil {
		return 0
	}
	return profile.DocumentObjects(document)
}

// resourceDocumentParses counts the pieces of resource files parsed on
// their own (parsePiece): what tells TestAPushParsesOnlyTheDocumentItChanged
// that a push parses the document it changed.
var resourceDocumentParses atomic.Int64

// checkAndCountReusingPieces is checkAndCountResourceFile for a file whose
// previous version, in the same context, had the pieces known (by the
// digest of their text): a piece of the same text is neither parsed nor
// type-checked again, and its count is the previous one (the typing check
// and the count of a document depend on its text alone). ok is false
// where the file is not one parseOnce would take, or a piece does not
// parse: the caller checks it as a cold build does.
func checkAndCountReusingPieces(file string, content []byte, known map[[32]byte]*ReusablePiece) (problems profile.Problems, objects int64, parsed *parsedResourceFile, ok bool) {
	if _, ok := profile.CheckYAMLText(file, content); !ok || !plainDocuments(content) {
		return nil, 0, nil, false
	}
	pieces, ok := splitAsKustomizesReader(string(content))
	if !ok || len(pieces) < 2 {
		return nil, 0, nil, false
	}
	resourceFileParses.Add(1)
	parsed = &parsedResourceFile{documents: make([]*yaml.Node, len(pieces)), pieces: make([]pieceRead, len(pieces))}
	var checked []*yaml.Node
	for i, piece := range pieces {
		digest := sha256.Sum256([]byte(piece))
		if previous := known[digest]; previous != nil {
			parsed.pieces[i] = pieceRead{digest: digest, objects: previous.Objects, reused: previous}
			objects += previous.Objects
			continue
		}
		document, ok := parsePiece(piece)
		if !ok {
			return nil, 0, nil, false
		}
		parsed.documents[i] = document
		parsed.pieces[i] = pieceRead{digest: digest, objects: pieceObjects(document)}
		if document != nil {
			checked = append(checked, document)
		}
	}
	problems, parsedObjects := profile.CheckDocumentsTypingAndCount(file, checked)
	return problems, objects + parsedObjects, parsed, true
}

// reusesPieces says whether the planning took some of the file's pieces
// from the previous build: its documents are then not all parsed, and
// only the linear path's piecewise reading (readPieces) may take them.
func (p *parsedResourceFile) reusesPieces() bool {
	for _, piece := range p.pieces {
		if piece.reused != nil {
			return true
		}
	}
	return false
}

// plainDocuments reports whether content has none of the lines and
// characters where the splitter and YAML part ways; see parseOnce.
func plainDocuments(content []byte) bool {
	if bytes.HasPrefix(content, []byte{0xfe, 0xff}) || bytes.HasPrefix(content, []byte{0xff, 0xfe}) ||
		bytes.Contains(content, []byte("\uFEFF")) || bytes.IndexByte(content, '\r') >= 0 ||
		bytes.Contains(content, []byte("\u0085")) || bytes.Contains(content, []byte("\u2028")) || bytes.Contains(content, []byte("\u2029")) {
		return false
	}
	for rest := content; len(rest) > 0; {
		line := rest
		if end := bytes.IndexByte(rest, '\n'); end >= 0 {
			line, rest = rest[:end], rest[end+1:]
		} else {
			rest = nil
		}
		switch {
		case bytes.HasPrefix(line, []byte("%")), bytes.HasPrefix(line, []byte("...")):
			return false
		case bytes.HasPrefix(line, []byte("---")):
			after := line[3:]
			if len(after) == 0 {
				continue
			}
			if after[0] != ' ' && after[0] != '\t' {
				return false
			}
			if after = bytes.TrimLeft(after, " \t"); len(after) > 0 && after[0] != '#' {
				return false
			}
		}
	}
	return true
}

// splitAsKustomizesReader is kio.ByteReader's splitDocuments, with the
// newline the reader gives back to every piece but the last; ok is false
// where the reader fails (a separator followed by other than a comment).
func splitAsKustomizesReader(s string) (pieces []string, ok bool) {
	if s == "" {
		return nil, true
	}
	previous := 0
	for _, at := range kustomizeDocumentSeparator.FindAllStringIndex(s, -1) {
		after := strings.TrimSpace(s[at[0]+4 : at[1]])
		if len(after) > 0 && after[0] != '#' {
			return nil, false
		}
		pieces = append(pieces, s[previous:at[0]]+"\n")
		previous = at[1]
	}
	return append(pieces, s[previous:]), true
}

// objectNodes are the nodes kio.ByteReader.Read, without its reader
// annotations, returns for the file: ok is false where it fails, or where
// it unwraps a List (left to it).
func (p *parsedResourceFile) objectNodes() (nodes []*yaml.RNode, ok bool) {
	for _, document := range p.documents {
		node := documentNode(document)
		if node == nil {
			continue
		}
		meta, err := node.GetMeta()
		if err != nil && err != yaml.ErrMissingMetadata { //nolint:errorlint // as kio.ByteReader compares it
			return nil, false
		}
		if len(p.documents) == 1 && (meta.Kind == kio.ResourceListKind || meta.Kind == "List") &&
			(node.Field("items") != nil || node.Field("functionConfig") != nil) {
			return nil, false
		}
		nodes = append(nodes, node)
	}
	return nodes, true
}

// documentNode is the node of a parsed document, nil for a document
// kio.ByteReader skips (none, empty, or null).
func documentNode(document *yaml.Node) *yaml.RNode {
	if document == nil || yaml.IsYNodeEmptyDoc(document) {
		return nil
	}
	node := yaml.NewRNode(document)
	if yaml.IsMissingOrNull(node) {
		return nil
	}
	return node
}
