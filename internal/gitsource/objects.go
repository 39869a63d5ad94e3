package gitsource

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Every Git object we read is bounded here, by its kind, before anything
// inflates it. go-git inflates a commit, a tree or a tag whole to decode it
// (Commit.Decode buffers the message), and its pack parser holds every
// object of a fetched pack whole in memory while it indexes it; a commit
// whose message is 1 GiB of one byte is about 1 MiB on the wire and on
// disk. So the size is read from the object's header — a loose object's
// first bytes, a packed object's pack header and, for a delta, the first
// bytes of the delta and its bases' headers — and an object over its bound
// is refused, naming it, its kind, its size, the bound and the flag.
//
// One storer does it for every repository we read (boundedStorage): the
// fetch's clone, the checkout, the records' mirror, ExportTree, CommitTime
// and the landscapes a CLI command opens. It checks every lookup, and it
// checks every pack a fetch writes before go-git indexes it.

// ErrObjectTooLarge marks a Git object refused for its size before it was
// inflated. Retrying cannot help until the object is gone from what is
// read or the limit is raised.
var ErrObjectTooLarge = errors.New("a Git object exceeds its size limit")

// ObjectSizeFlag is the flag that raises every object bound: the bounds are
// derived from the checkout size (ObjectLimitsFor).
const ObjectSizeFlag = MaxCheckoutSizeFlag

// The least bounds of commits and tags and of trees: what they are when the
// checkout size is unlimited or small. A commit and a tag are text (a
// message, a signature); a tree of 8 MiB lists some 200,000 files.
const (
	minCommitBound = 2 << 20
	minTreeBound   = 8 << 20
)

// ObjectLimits bound the size of each kind of Git object a reader may
// inflate. Zero means no bound.
type ObjectLimits struct {
	Commit, Tree, Tag, Blob int64
}

// ObjectLimitsFor derives the object bounds from the checkout size limit
// (0: none), so that the one flag that bounds a checkout raises them all:
// a blob may be as large as the checkout, a tree an eighth of it, a commit
// or a tag a thirty-second (at least 8 MiB and 2 MiB: at the default 64 MiB
// checkout, exactly those).
func ObjectLimitsFor(maxCheckoutSize int64) ObjectLimits {
	return ObjectLimits{
		Commit: max(minCommitBound, maxCheckoutSize/32),
		Tag:    max(minCommitBound, maxCheckoutSize/32),
		Tree:   max(minTreeBound, maxCheckoutSize/8),
		Blob:   maxCheckoutSize,
	}
}

// of is the bound of kind; an unknown kind (a delta whose base is not at
// hand) gets the largest.
func (l ObjectLimits) of(kind plumbing.ObjectType) int64 {
	switch kind {
	case plumbing.CommitObject:
		return l.Commit
	case plumbing.TreeObject:
		return l.Tree
	case plumbing.TagObject:
		return l.Tag
	case plumbing.BlobObject:
		return l.Blob
	}
	if l.Blob == 0 || l.Commit == 0 || l.Tree == 0 || l.Tag == 0 {
		return 0
	}
	return max(l.Commit, l.Tree, l.Tag, l.Blob)
}

// ObjectTooLargeError is an object refused for its size.
type ObjectTooLargeError struct {
	// Object is the object's SHA-1; zero for an object of a fetched pack,
	// which is refused before it could be hashed (Where says where it is).
	Object plumbing.Hash
	// Where names the object when its hash is unknown.
	Where string
	Kind  plumbing.ObjectType
	// What is the size refused: "" for the object's own, or "its delta
	// data" for a delta's instructions.
	What  string
	Size  int64
	Limit int64
}

func (e *ObjectTooLargeError) Error() string {
	kind := "object"
	if e.Kind.Valid() && !e.Kind.IsDelta() {
		kind = e.Kind.String()
	}
	name := e.Where
	if !e.Object.IsZero() {
		name = e.Object.String()
	}
	what := ""
	if e.What != "" {
		what = " (" + e.What + ")"
	}
	if e.Kind == plumbing.BlobObject {
		// A blob's bound is the checkout's own.
		return fmt.Sprintf("blob %s is %s%s, more than the maximum checkout size of %s (raise it with --%s)",
			name, formatBytes(e.Size), what, formatBytes(e.Limit), ObjectSizeFlag)
	}
	return fmt.Sprintf("%s %s is %s%s, more than the %s a %s may have (raise it with --%s)",
		kind, name, formatBytes(e.Size), what, formatBytes(e.Limit), kind, ObjectSizeFlag)
}

// Is makes errors.Is(err, ErrObjectTooLarge) true, and for a blob, which
// is bounded by the checkout size itself, errors.Is(err,
// ErrCheckoutTooLarge) too: no checkout could hold it.
func (e *ObjectTooLargeError) Is(target error) bool {
	return target == ErrObjectTooLarge || target == ErrCheckoutTooLarge && e.Kind == plumbing.BlobObject
}

// check refuses size for kind when it passes its bound.
func (l ObjectLimits) check(hash plumbing.Hash, where string, kind plumbing.ObjectType, what string, size int64) error {
	limit := l.of(kind)
	if what != "" && limit > 0 {
		// A delta's instructions: one byte per 127 inserted, plus copies
		// of at most 7 bytes each; twice the bound is more than any delta
		// that builds an object within it needs.
		limit = 2*limit + 64
	}
	if limit > 0 && size > limit {
		return &ObjectTooLargeError{Object: hash, Where: where, Kind: kind, What: what, Size: size, Limit: limit}
	}
	return nil
}

// maxDeltaDepth bounds the chain of deltas a header is followed through,
// as Git's own packs do (pack-objects' 4095).
const maxDeltaDepth = 4095

// boundedStorage is the storer of every repository we read: go-git's
// filesystem storage, with lookups checked by objectHeaders first and the
// packs a fetch writes checked before go-git indexes them.
type boundedStorage struct {
	*filesystem.Storage
	// deltas reads packed deltas, inflated whole (openBoundedStorage).
	deltas  *filesystem.Storage
	limits  ObjectLimits
	headers *objectHeaders

	refusedMu sync.Mutex
	refused   error
}

// openBoundedStorage opens the .git directory (or bare repository) dotGit
// for reading within limits. Objects over lazyObjectThreshold are read as
// they are consumed, not inflated on lookup, except a packed delta: go-git's
// streaming delta reader (packfile.ReaderFromDelta, v5.19.3) does not go
// back to the start of the base when a copy goes backwards, so a large blob
// stored as a delta came out with the right size and the wrong bytes
// (TestADeltaOfALargeBaseIsReadByteForByte). A delta is read through a
// second storage that inflates it whole, within the bound its header was
// checked against. keepDescriptors keeps the pack files open across lookups
// (many small reads); Close releases them.
func openBoundedStorage(dotGit billy.Filesystem, limits ObjectLimits, cacheSize cache.FileSize, keepDescriptors bool) *boundedStorage {
	storage := filesystem.NewStorageWithOptions(dotGit, cache.NewObjectLRU(cacheSize),
		filesystem.Options{LargeObjectThreshold: lazyObjectThreshold, KeepDescriptors: keepDescriptors})
	whole := filesystem.NewStorageWithOptions(dotGit, cache.NewObjectLRU(cacheSize), filesystem.Options{KeepDescriptors: keepDescriptors})
	return &boundedStorage{Storage: storage, deltas: whole, limits: limits, headers: newObjectHeaders(dotGit, limits)}
}

// EncodedObject refuses an object over its bound before go-git reads it.
func (s *boundedStorage) EncodedObject(kind plumbing.ObjectType, hash plumbing.Hash) (plumbing.EncodedObject, error) {
	if err := s.check(hash); err != nil {
		return nil, err
	}
	if !s.headers.packedAsDelta(hash) {
		return s.Storage.EncodedObject(kind, hash)
	}
	object, err := s.deltas.EncodedObject(kind, hash)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// A pack fetched since deltas last listed the packs.
		s.deltas.Reindex()
		object, err = s.deltas.EncodedObject(kind, hash)
	}
	return object, err
}

// EncodedObjectSize is the object's size, within its bound.
func (s *boundedStorage) EncodedObjectSize(hash plumbing.Hash) (int64, error) {
	if err := s.check(hash); err != nil {
		return 0, err
	}
	return s.Storage.EncodedObjectSize(hash)
}

// DeltaObject is EncodedObject for the pack encoder of a push.
func (s *boundedStorage) DeltaObject(kind plumbing.ObjectType, hash plumbing.Hash) (plumbing.EncodedObject, error) {
	if err := s.check(hash); err != nil {
		return nil, err
	}
	return s.Storage.DeltaObject(kind, hash)
}

func (s *boundedStorage) check(hash plumbing.Hash) error {
	err := s.headers.check(hash)
	if errors.Is(err, ErrObjectTooLarge) {
		s.refusedMu.Lock()
		s.refused = err
		s.refusedMu.Unlock()
	}
	return err
}

// lastRefusal is the last object refused for its size, for a caller whose
// go-git call answered "not found" where a lookup was refused (resolving a
// revision does).
func (s *boundedStorage) lastRefusal() error {
	s.refusedMu.Lock()
	defer s.refusedMu.Unlock()
	return s.refused
}

// PackfileWriter receives a fetched pack into a temporary file, checks
// every object's header in it, and only then indexes and stores it (what
// go-git's own writer does, which inflates every object whole while it
// indexes). A pack holding an object over its bound is removed and refused.
func (s *boundedStorage) PackfileWriter() (io.WriteCloser, error) {
	fs := s.Filesystem()
	file, err := fs.TempFile(fs.Join("objects", "pack"), "tmp_pack_")
	if err != nil {
		return nil, err
	}
	return &checkedPackWriter{storage: s, fs: fs, file: file}, nil
}

// Close releases the pack files of both the storage and the header reader.
func (s *boundedStorage) Close() error {
	s.headers.reset()
	return errors.Join(s.deltas.Close(), s.Storage.Close())
}

// checkedPackWriter is the PackfileWriter of boundedStorage.
type checkedPackWriter struct {
	storage *boundedStorage
	fs      billy.Filesystem
	file    billy.File
	written int64
	// failed: a write failed (the disk budget), so the pack is incomplete
	// and Close only removes it.
	failed bool
}

func (w *checkedPackWriter) Write(p []byte) (int, error) {
	n, err := w.file.Write(p)
	w.written += int64(n)
	if err != nil {
		w.failed = true
	}
	return n, err
}

func (w *checkedPackWriter) Close() error {
	name := w.file.Name()
	stored := false
	defer func() {
		if !stored {
			_ = w.file.Close()
			_ = w.fs.Remove(name)
		}
	}()
	if w.written == 0 || w.failed {
		return nil
	}
	if _, err := w.file.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read the fetched pack: %w", err)
	}
	if err := w.storage.checkPack(w.file); err != nil {
		return err
	}
	if _, err := w.file.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read the fetched pack: %w", err)
	}
	// What go-git's own pack writer does, now that every object is known
	// to be within its bound: index the pack, then store both.
	index := new(idxfile.Writer)
	parser, err := packfile.NewParser(packfile.NewScanner(w.file), index)
	if err != nil {
		return fmt.Errorf("index the fetched pack: %w", err)
	}
	checksum, err := parser.Parse()
	if err != nil {
		return fmt.Errorf("index the fetched pack: %w", err)
	}
	memoryIndex, err := index.Index()
	if err != nil {
		return fmt.Errorf("index the fetched pack: %w", err)
	}
	base := w.fs.Join("objects", "pack", "pack-"+checksum.String())
	idx, err := w.fs.Create(base + ".idx")
	if err != nil {
		return fmt.Errorf("store the index of the fetched pack: %w", err)
	}
	if _, err := idxfile.NewEncoder(idx).Encode(memoryIndex); err != nil {
		_ = idx.Close()
		return fmt.Errorf("store the index of the fetched pack: %w", err)
	}
	if err := idx.Close(); err != nil {
		return fmt.Errorf("store the index of the fetched pack: %w", err)
	}
	if err := w.file.Close(); err != nil {
		return fmt.Errorf("store the fetched pack: %w", err)
	}
	if err := w.fs.Rename(name, base+".pack"); err != nil {
		return fmt.Errorf("store the fetched pack: %w", err)
	}
	stored = true
	// go-git lists the packs once; the new one is found from now on.
	w.storage.Reindex()
	w.storage.headers.reset()
	return nil
}

// checkPack walks the objects of a pack by their headers and refuses the
// first over its bound. An object within its bound is inflated as it
// streams past, into a hash (to know the kind of what a delta names), never
// held. A delta's kind is its base's; a delta on a base neither in the pack
// nor in the repository is bounded by the largest bound.
func (s *boundedStorage) checkPack(pack io.ReadSeeker) error {
	scanner := packfile.NewScanner(pack)
	_, count, err := scanner.Header()
	if err != nil {
		return fmt.Errorf("read the fetched pack: %w", err)
	}
	kindAt := map[int64]plumbing.ObjectType{}
	kindOf := map[plumbing.Hash]plumbing.ObjectType{}
	for i := uint32(0); i < count; i++ {
		header, err := scanner.NextObjectHeader()
		if err != nil {
			return fmt.Errorf("read the fetched pack: %w", err)
		}
		where := fmt.Sprintf("number %d of %d in the fetched pack", i+1, count)
		if !header.Type.IsDelta() {
			if err := s.limits.check(plumbing.ZeroHash, where, header.Type, "", header.Length); err != nil {
				return err
			}
			hasher := plumbing.NewHasher(header.Type, header.Length)
			if _, _, err := scanner.NextObject(hasher); err != nil {
				return fmt.Errorf("read the fetched pack: %w", err)
			}
			kindAt[header.Offset] = header.Type
			kindOf[hasher.Sum()] = header.Type
			continue
		}
		kind := plumbing.AnyObject
		if header.Type == plumbing.OFSDeltaObject {
			kind = kindAt[header.OffsetReference]
		} else if known, ok := kindOf[header.Reference]; ok {
			kind = known
		} else if baseKind, _, err := s.headers.header(header.Reference, 0); err == nil {
			kind = baseKind
		}
		if kind == plumbing.InvalidObject {
			kind = plumbing.AnyObject
		}
		if err := s.limits.check(plumbing.ZeroHash, where, kind, "its delta data", header.Length); err != nil {
			return err
		}
		target := &deltaSizes{}
		if _, _, err := scanner.NextObject(target); err != nil {
			return fmt.Errorf("read the fetched pack: %w", err)
		}
		size, err := target.targetSize()
		if err != nil {
			return fmt.Errorf("read the fetched pack: object %s: %w", where, err)
		}
		if err := s.limits.check(plumbing.ZeroHash, where, kind, "", size); err != nil {
			return err
		}
		kindAt[header.Offset] = kind
	}
	return nil
}

// deltaSizes keeps the first bytes of a delta, which hold the sizes of its
// base and of the object it makes, and lets the rest stream past.
type deltaSizes struct {
	head []byte
}

// deltaHeadSize is enough for two sizes of up to 64 bits in LEB128.
const deltaHeadSize = 20

func (d *deltaSizes) Write(p []byte) (int, error) {
	if room := deltaHeadSize - len(d.head); room > 0 {
		d.head = append(d.head, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// targetSize is the size of the object the delta makes: the second LEB128
// number of the delta, after its base's size.
func (d *deltaSizes) targetSize() (int64, error) {
	rest := d.head
	var sizes [2]uint64
	for i := range sizes {
		var shift uint
		for {
			if len(rest) == 0 || shift > 63 {
				return 0, errors.New("malformed delta header")
			}
			b := rest[0]
			rest = rest[1:]
			sizes[i] |= uint64(b&0x7f) << shift
			shift += 7
			if b&0x80 == 0 {
				break
			}
		}
	}
	if sizes[1] > 1<<62 {
		return 1 << 62, nil
	}
	return int64(sizes[1]), nil
}

// errDeltaHeadRead stops the inflation of a delta once its sizes are read.
var errDeltaHeadRead = errors.New("delta sizes read")

// deltaHead is deltaSizes that stops the inflation after the sizes, for a
// lookup that needs nothing else of the delta.
type deltaHead struct{ deltaSizes }

func (d *deltaHead) Write(p []byte) (int, error) {
	n, _ := d.deltaSizes.Write(p)
	if len(d.head) >= deltaHeadSize {
		return n, errDeltaHeadRead
	}
	return n, nil
}

// objectHeaders reads the kind and size of an object of one repository from
// its header, loose or packed, without inflating it, and checks them (and a
// delta's chain) against the limits.
type objectHeaders struct {
	fs     billy.Filesystem
	limits ObjectLimits

	mu sync.Mutex
	// packs are the repository's packs with their indexes, read at the
	// first lookup of a packed object and again when a lookup misses.
	packs  []*packHeaders
	listed bool
	// checked remembers objects found within their bounds, so that a
	// history read commit by commit reads each header once.
	checked map[plumbing.Hash]bool
}

type packHeaders struct {
	index   *idxfile.MemoryIndex
	file    billy.File
	scanner *packfile.Scanner
}

// maxChecked bounds objectHeaders.checked; past it, it starts over.
const maxChecked = 1 << 16

func newObjectHeaders(fs billy.Filesystem, limits ObjectLimits) *objectHeaders {
	return &objectHeaders{fs: fs, limits: limits, checked: map[plumbing.Hash]bool{}}
}

// check refuses hash when it, or a delta base it is made from, is over its
// bound. An object found nowhere is left to go-git, which says so.
func (h *objectHeaders) check(hash plumbing.Hash) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.checked[hash] {
		return nil
	}
	// An object found nowhere the headers are read from is not read at
	// all: go-git answers "not found" too, unless it looked where we did
	// not, which must not be a way around the bounds.
	if _, _, err := h.headerLocked(hash, 0); err != nil {
		return err
	}
	if len(h.checked) >= maxChecked {
		clear(h.checked)
	}
	h.checked[hash] = true
	return nil
}

// packedAsDelta says whether hash is stored in a pack as a delta.
func (h *objectHeaders) packedAsDelta(hash plumbing.Hash) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	pack, offset, found := h.inKnownPacks(hash)
	if !found {
		return false
	}
	header, err := pack.scanner.SeekObjectHeader(offset)
	return err == nil && header.Type.IsDelta()
}

// header is the checked kind and size of hash.
func (h *objectHeaders) header(hash plumbing.Hash, depth int) (plumbing.ObjectType, int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.headerLocked(hash, depth)
}

func (h *objectHeaders) headerLocked(hash plumbing.Hash, depth int) (plumbing.ObjectType, int64, error) {
	if depth > maxDeltaDepth {
		return plumbing.InvalidObject, 0, fmt.Errorf("object %s: a chain of more than %d deltas", hash, maxDeltaDepth)
	}
	// The packs first, as go-git looks: a history is read from packs, and
	// a missing loose file costs a system call.
	if pack, offset, found := h.inKnownPacks(hash); found {
		return h.packedHeader(pack, hash, offset, depth)
	}
	kind, size, err := h.looseHeader(hash)
	if err == nil {
		return kind, size, h.limits.check(hash, "", kind, "", size)
	}
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return plumbing.InvalidObject, 0, err
	}
	// Objects of another repository (objects/info/alternates) are not
	// looked for: go-git confines them to the repository's directory.
	pack, offset, err := h.findPacked(hash)
	if err != nil {
		return plumbing.InvalidObject, 0, err
	}
	return h.packedHeader(pack, hash, offset, depth)
}

// inKnownPacks finds hash in the packs listed so far, listing them first
// if they never were.
func (h *objectHeaders) inKnownPacks(hash plumbing.Hash) (*packHeaders, int64, bool) {
	if !h.listed {
		if err := h.listPacks(); err != nil {
			return nil, 0, false
		}
	}
	for _, pack := range h.packs {
		if offset, err := pack.index.FindOffset(hash); err == nil {
			return pack, offset, true
		}
	}
	return nil, 0, false
}

// looseHeader reads the "kind size" header of a loose object: a few bytes
// inflated, whatever the object's size.
func (h *objectHeaders) looseHeader(hash plumbing.Hash) (kind plumbing.ObjectType, size int64, err error) {
	hex := hash.String()
	file, err := h.fs.Open(path.Join("objects", hex[:2], hex[2:]))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return plumbing.InvalidObject, 0, plumbing.ErrObjectNotFound
		}
		return plumbing.InvalidObject, 0, err
	}
	defer file.Close()
	reader, err := objfile.NewReader(file)
	if err != nil {
		return plumbing.InvalidObject, 0, fmt.Errorf("read the header of object %s: %w", hash, err)
	}
	defer reader.Close()
	kind, size, err = reader.Header()
	if err != nil {
		return plumbing.InvalidObject, 0, fmt.Errorf("read the header of object %s: %w", hash, err)
	}
	return kind, size, nil
}

// findPacked finds the pack and offset of hash after listing the packs
// again: it is in none of those known (a fetch may have added one).
func (h *objectHeaders) findPacked(hash plumbing.Hash) (*packHeaders, int64, error) {
	if err := h.listPacks(); err != nil {
		return nil, 0, err
	}
	if pack, offset, found := h.inKnownPacks(hash); found {
		return pack, offset, nil
	}
	return nil, 0, plumbing.ErrObjectNotFound
}

// listPacks reads the indexes of the packs not read yet.
func (h *objectHeaders) listPacks() error {
	h.listed = true
	dir := path.Join("objects", "pack")
	entries, err := h.fs.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list the packs: %w", err)
	}
	known := map[string]bool{}
	for _, pack := range h.packs {
		known[pack.file.Name()] = true
	}
	for _, entry := range entries {
		name, ok := strings.CutSuffix(entry.Name(), ".pack")
		if !ok || !strings.HasPrefix(name, "pack-") || known[path.Join(dir, entry.Name())] {
			continue
		}
		pack, err := h.openPack(path.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // a pack without its index yet, or just removed
		}
		if err != nil {
			return err
		}
		h.packs = append(h.packs, pack)
	}
	return nil
}

func (h *objectHeaders) openPack(base string) (*packHeaders, error) {
	idxFile, err := h.fs.Open(base + ".idx")
	if err != nil {
		return nil, err
	}
	defer idxFile.Close()
	index := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(idxFile).Decode(index); err != nil {
		return nil, fmt.Errorf("read the index of %s: %w", base, err)
	}
	file, err := h.fs.Open(base + ".pack")
	if err != nil {
		return nil, err
	}
	return &packHeaders{index: index, file: file, scanner: packfile.NewScanner(file)}, nil
}

// packedHeader reads the header of the object at offset of pack and, for a
// delta, its chain of bases, checking each size: a base, a delta's
// instructions and the object it makes are each inflated whole by go-git.
func (h *objectHeaders) packedHeader(pack *packHeaders, hash plumbing.Hash, offset int64, depth int) (plumbing.ObjectType, int64, error) {
	if depth > maxDeltaDepth {
		return plumbing.InvalidObject, 0, fmt.Errorf("object %s: a chain of more than %d deltas", hash, maxDeltaDepth)
	}
	header, err := pack.scanner.SeekObjectHeader(offset)
	if err != nil {
		return plumbing.InvalidObject, 0, fmt.Errorf("read the header of object %s: %w", hash, err)
	}
	if !header.Type.IsDelta() {
		return header.Type, header.Length, h.limits.check(hash, "", header.Type, "", header.Length)
	}
	var kind plumbing.ObjectType
	if header.Type == plumbing.OFSDeltaObject {
		base, err := pack.index.FindHash(header.OffsetReference)
		if err != nil {
			return plumbing.InvalidObject, 0, fmt.Errorf("read the delta base of object %s: %w", hash, err)
		}
		kind, _, err = h.packedHeader(pack, base, header.OffsetReference, depth+1)
		if err != nil {
			return plumbing.InvalidObject, 0, throughBase(hash, err)
		}
	} else {
		kind, _, err = h.headerLocked(header.Reference, depth+1)
		if err != nil {
			return plumbing.InvalidObject, 0, throughBase(hash, err)
		}
	}
	if err := h.limits.check(hash, "", kind, "its delta data", header.Length); err != nil {
		return plumbing.InvalidObject, 0, err
	}
	if _, err := pack.scanner.SeekObjectHeader(offset); err != nil {
		return plumbing.InvalidObject, 0, fmt.Errorf("read the header of object %s: %w", hash, err)
	}
	sizes := &deltaHead{}
	if _, _, err := pack.scanner.NextObject(sizes); err != nil && !errors.Is(err, errDeltaHeadRead) && len(sizes.head) == 0 {
		return plumbing.InvalidObject, 0, fmt.Errorf("read the delta of object %s: %w", hash, err)
	}
	size, err := sizes.targetSize()
	if err != nil {
		return plumbing.InvalidObject, 0, fmt.Errorf("read the delta of object %s: %w", hash, err)
	}
	return kind, size, h.limits.check(hash, "", kind, "", size)
}

// throughBase names hash in the refusal of a delta base it is made from:
// go-git holds the base whole to apply the delta, so the object read is
// refused for it.
func throughBase(hash plumbing.Hash, err error) error {
	var tooLarge *ObjectTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Object == hash {
		return err
	}
	what := "its delta base " + tooLarge.Object.String()
	if tooLarge.What != "" {
		what += ", " + tooLarge.What
	}
	return &ObjectTooLargeError{Object: hash, Kind: tooLarge.Kind, What: what, Size: tooLarge.Size, Limit: tooLarge.Limit}
}

// reset forgets the packs, so that the next lookup lists them anew (a
// fetch added one, a repack removed some).
func (h *objectHeaders) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, pack := range h.packs {
		_ = pack.file.Close()
	}
	h.packs, h.listed = nil, false
}
