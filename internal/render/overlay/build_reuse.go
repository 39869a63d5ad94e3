package overlay

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"

	"github.com/profilesync/profilesync/internal/render/profile"
)

// A push changes one resource file of a landscape, and a build of the
// next revision would parse, transform and render every other file again
// to the same documents. A build on the linear path (buildPlain) may take
// those documents from the build before it instead, by reference:
// BuildReusing answers Built.Reused, and the caller, which kept the
// previous build's documents, splices them in (Built.Splice).
//
// The rule is the simplest one that cannot change a result: a use of a
// resource file is reused when, on the linear path,
//
//   - the file (its root-relative path) and its bytes (their SHA-256) are
//     those of a use in the previous build;
//   - so is its context (reuseContext): the build's target, every
//     kustomization file (path and bytes) on the chain from the target to
//     the kustomization that lists the file, and the entries that lead to
//     it (its origin), which together decide everything that transforms
//     and names its objects (labels, annotations, the origin) on the
//     linear path;
//   - no kustomization on that chain has patches (a patch's warnings and
//     its provenance depend on every object it reaches; such a file is
//     built cold);
//   - the read is the one the planning parses (a file listed twice is
//     parsed for its first use only, and its other uses are built cold).
//
// A file a push changed is reused document by document, under the same
// rule for its context: a piece of it (its text between two document
// separators, as kustomize's reader cuts it; checkAndCountReusingPieces)
// whose text is that of a piece of the previous version is neither parsed
// nor type-checked (both depend on the piece's text alone), and its
// documents come in its place, when the file has at least two pieces and
// the linear path made each object of its own piece's document
// (readPieces: no List, which kustomize expands after the file's other
// objects). Anything else in such a file reads it cold.
//
// Everything that spans files stays a cold build's: the reused file's
// objects are counted (Objects) against MaxObjects where the typing check
// would have counted them, their identities enter the check for objects
// defined twice, their rendered sizes enter MaxRenderedSize at their place
// in the order, and a build that the linear path hands to kustomize (for a
// duplicate, for anything it does not build) is a cold kustomize build. The
// typing check is not run again on bytes it accepted under the same name.
// The facts of the previous build come from the caller, which is trusted
// (the manager keeps what the previous build answered); the files' content
// is still read, within the limits, and digested.
//
// TestAReusingBuildIsAColdBuild holds reusing builds of edited landscapes
// to cold builds, documents, warnings and errors alike;
// TestAPushParsesOnlyTheFileItChanged and
// TestAPushParsesOnlyTheDocumentItChanged count the parses.

// Reusable is what a build on the linear path leaves for the next build of
// the same target: each use of a resource file, in the order of the
// build's documents.
type Reusable struct {
	Files []ReusableFile `json:",omitempty"`
}

// ReusableFile is one use of a resource file in a build.
type ReusableFile struct {
	// File is the file, root-relative.
	File string
	// Context is the digest of what decides how the file's objects render
	// (reuseContext).
	Context [32]byte
	// Digest is the SHA-256 of the file's bytes.
	Digest [32]byte
	// Objects is what the typing check counted of the file, against
	// MaxObjects.
	Objects int64
	// First is the index of the file's first document in the build's
	// documents; Documents are its documents, in order.
	First     int
	Documents []ReusableDocument `json:",omitempty"`
	// Pieces are the file's pieces (its text cut at its document
	// separators, as kustomize's reader cuts it), when the build read its
	// objects piece by piece: the next build reuses the documents of the
	// pieces a push did not change in a file it changed.
	Pieces []ReusablePiece `json:",omitempty"`
}

// ReusablePiece is one piece of a resource file: the SHA-256 of its text,
// what the typing check counted of it, and its documents (none or one),
// the first at First of the build's documents.
type ReusablePiece struct {
	Digest    [32]byte
	Objects   int64
	First     int                `json:",omitempty"`
	Documents []ReusableDocument `json:",omitempty"`
}

// ReusableDocument is what a build needs of a reused document: its
// object's identity, for the check of objects defined twice, and its
// rendered size, for MaxRenderedSize.
type ReusableDocument struct {
	Group, Version, Kind, Name, Namespace string `json:",omitempty"`
	Size                                  int64
}

// Reused says that the Count documents of the previous build starting at
// From come at At of this build's documents.
type Reused struct{ At, From, Count int }

// Built is a build's answer when it may reuse the previous build's
// documents.
type Built struct {
	// Documents are the documents built, without those reused.
	Documents []profile.Document `json:",omitempty"`
	// Reused are where the previous build's documents go, in order of At.
	Reused   []Reused         `json:",omitempty"`
	Warnings profile.Problems `json:",omitempty"`
	// Reusable is what the next build may reuse of this one; nil when
	// the build did not take the linear path.
	Reusable *Reusable `json:",omitempty"`
}

// Splice returns the build's documents: Documents with the previous
// build's documents of Reused in their places. previous must be the
// documents of the build whose Reusable the build was given.
func (b Built) Splice(previous []profile.Document) ([]profile.Document, error) {
	if len(b.Reused) == 0 {
		return b.Documents, nil
	}
	total := len(b.Documents)
	for _, r := range b.Reused {
		total += r.Count
	}
	docs := make([]profile.Document, 0, total)
	built := 0
	for _, r := range b.Reused {
		if r.Count < 0 || r.From < 0 || r.From+r.Count > len(previous) || r.At < len(docs) || r.At-len(docs) > len(b.Documents)-built {
			return nil, fmt.Errorf("the build reused documents %d to %d of a previous build of %d at %d, which do not fit", r.From, r.From+r.Count, len(previous), r.At)
		}
		take := r.At - len(docs)
		docs = append(docs, b.Documents[built:built+take]...)
		built += take
		docs = append(docs, previous[r.From:r.From+r.Count]...)
	}
	return append(docs, b.Documents[built:]...), nil
}

// BuildReusing is BuildWithWarningsWithin that may reuse, by reference,
// the documents of the build that answered previous (nil for none); see
// the rule above. The caller splices them in (Built.Splice).
func BuildReusing(ctx, extras context.Context, root, path string, limits Limits, previous *Reusable) (Built, error) {
	return buildWithChecksReusing(ctx, extras, root, path, limits, true, previous)
}

// reuseFormat is mixed into every context, so that facts of a build of
// another version of the rule are never taken.
const reuseFormat = "profilesync build reuse 1\x00"

// reuseContext is the context of a kustomization: its parent's (the
// target's for the top-level one) and its file's path and bytes.
func reuseContext(parent [32]byte, path string, content []byte) [32]byte {
	h := sha256.New()
	h.Write(parent[:])
	fmt.Fprintf(h, "%d:%s", len(path), path)
	h.Write(content)
	return [32]byte(h.Sum(nil))
}

// targetContext is the context every chain starts from: the build's
// target and the kustomization file documents without an origin name.
func targetContext(target, kustomizationFile string) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%s%d:%s%d:%s", reuseFormat, len(target), target, len(kustomizationFile), kustomizationFile)
	return [32]byte(h.Sum(nil))
}

// fileContext is the context of one use of a resource file: its
// kustomization's and its origin.
func fileContext(kustomization [32]byte, origin string) [32]byte {
	return reuseContext(kustomization, filepath.ToSlash(origin), nil)
}

// reuseKey finds a use of a file in the previous build.
type reuseKey struct {
	file    string
	context [32]byte
}

// previousUses indexes the previous build's uses by file and context.
func previousUses(previous *Reusable) map[reuseKey][]*ReusableFile {
	if previous == nil {
		return nil
	}
	uses := make(map[reuseKey][]*ReusableFile, len(previous.Files))
	for i := range previous.Files {
		use := &previous.Files[i]
		key := reuseKey{file: use.File, context: use.Context}
		uses[key] = append(uses[key], use)
	}
	return uses
}

// reusablePieces are the pieces of the previous build's uses of the file
// at abs in the context the planning set, by the digest of their text;
// nil for none.
func (r *buildFS) reusablePieces(abs string) map[[32]byte]*ReusablePiece {
	if r.readContext == nil {
		return nil
	}
	var known map[[32]byte]*ReusablePiece
	for _, use := range r.previous[reuseKey{file: r.display(abs), context: *r.readContext}] {
		for i := range use.Pieces {
			if known == nil {
				known = make(map[[32]byte]*ReusablePiece)
			}
			known[use.Pieces[i].Digest] = &use.Pieces[i]
		}
	}
	return known
}

// resourceRead is what ReadFile tells the planning of the resource file
// it has just read for it (see buildFS.resourceRead).
type resourceRead struct {
	// counted says that the read was the one that parses and counts the
	// file; objects is its count, digest its bytes' SHA-256.
	counted bool
	objects int64
	digest  [32]byte
	// reused is the previous build's use it matched, if any.
	reused *ReusableFile
	// pieces are the file's pieces as the planning read them, nil when it
	// did not read it piece by piece (parseOnce).
	pieces []pieceRead
}

// reusableUse returns the previous build's use of the file at abs with
// content in the context the planning set, if there is one.
func (r *buildFS) reusableUse(abs string, content []byte) (*ReusableFile, [32]byte) {
	digest := sha256.Sum256(content)
	if r.readContext == nil {
		return nil, digest
	}
	for _, use := range r.previous[reuseKey{file: r.display(abs), context: *r.readContext}] {
		if use.Digest == digest {
			return use, digest
		}
	}
	return nil, digest
}

// objectKey identifies an object as kustomize does when it refuses one
// defined twice: group, version, kind, name and effective namespace.
type objectKey struct{ group, version, kind, name, namespace string }

func (d ReusableDocument) key() objectKey {
	return objectKey{group: d.Group, version: d.Version, kind: d.Kind, name: d.Name, namespace: d.Namespace}
}

func (k objectKey) document(size int64) ReusableDocument {
	return ReusableDocument{Group: k.group, Version: k.version, Kind: k.kind, Name: k.name, Namespace: k.namespace, Size: size}
}
