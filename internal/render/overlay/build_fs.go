package overlay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
)

// errReadOnly is returned for every attempt of kustomize to write: a build
// only reads the repository.
var errReadOnly = errors.New("the repository is read-only during a build")

// gitMetadataDir is the directory a build never sees: it is Git's, not the
// profiles', and it may hold what a commit must never read (the remote's
// address, hooks, other branches).
const gitMetadataDir = ".git"

// buildFS is the file system kustomize builds on, and the one place where
// everything a build reads passes. kustomize's file loader is built into
// krusty and cannot be replaced; it fetches a location from the network as
// soon as it is asked to load one, and the only way a location reaches it
// is inside a file it has read from here. So buildFS refuses, when it reads
// them, the files that would send the loader elsewhere (see vetKustomization)
// and serves only:
//
//   - the work tree below root, without .git/, read-only; a path or symbolic
//     link leading out of root is refused like a path that leaves it;
//   - files within Limits: a file over MaxFileSize (counting its YAML aliases
//     written out) and reads past MaxRenderedSize in total are refused;
//   - while ctx lasts: once it is done, every call fails, so an abandoned
//     build stops at its next file access;
//   - with some files replaced by content held in memory (the top-level
//     kustomization with build options added, or one generated for a plain
//     directory of YAML files).
//
// kustomize often tries a file and goes on when it cannot read it, so the
// refusals are also recorded, and Build reports them instead of what
// kustomize made of them.
type buildFS struct {
	ctx     context.Context
	root    string // absolute, symbolic links resolved
	limits  Limits
	disk    filesys.FileSystem
	virtual map[string][]byte // absolute path → content

	// read counts the bytes served so far, against limits.MaxRenderedSize.
	read int64
	// objects counts the objects in the files served so far, against
	// limits.MaxObjects.
	objects int64
	// served keeps what kustomize read from the work tree, by absolute
	// path, for what a build reads again once kustomize is done (see
	// sourceContent): that must not count against the limits twice.
	served map[string][]byte
	// prefetched counts, by absolute path, the reads of files that
	// planResources has made ahead of kustomize and kustomize has not made
	// yet: each is served from served, checked and counted already.
	prefetched map[string]int
	// planning says that planResources is reading: a resource file it
	// reads is parsed once for the typing check, the count and the linear
	// path's objects, and the parse is kept in parsed, by absolute path,
	// until the linear path takes it (buildPlain) or the build goes
	// through kustomize, which parses the files itself.
	planning bool
	parsed   map[string]*parsedResourceFile
	// heldParses is the size of the files whose parses the build has kept
	// in parsed, taken or not (it never decreases), and maxHeldParses its
	// bound (maxHeldParseSource): a file read past it is parsed again by
	// the linear path, as before.
	heldParses, maxHeldParses int64
	// resourceFiles are the files the kustomizations vetted so far list as
	// resources: kustomize reads them as YAML (other files it may read as
	// data, a generator's).
	resourceFiles map[string]bool
	// patches are the patch files the kustomizations vetted so far list,
	// by absolute path, and where they list them (see checkPatch).
	patches map[string]patchUse
	// vetted remembers each kustomization already checked, and its verdict.
	vetted map[string]error
	// componentDepth is how deep each component directory listed so far
	// nests below the top-level kustomization (see maxComponentDepth).
	componentDepth map[string]int
	// refusals are the errors of refused reads, in order, each once.
	refusals []error
	// krustyRuns counts the kustomize runs on this file system: what
	// tells the tests of the linear path and of the early object count that
	// kustomize never ran.
	krustyRuns int
	// checkedWhileBuilding says that the build took the linear path, which
	// checked the patches as it applied them: warningsWhileBuilding are
	// its warnings, and the documents' SetBy are set. The checks after a
	// kustomize build (indexPatchWarnings, fieldSources) are then done.
	checkedWhileBuilding  bool
	warningsWhileBuilding profile.Problems
	// plainAttempts counts the builds tried on the linear path
	// (accumulatePlain), for the same tests.
	plainAttempts int

	// previous are the uses of resource files of the build before this
	// one that this one may reuse (see BuildReusing), by file and context.
	previous map[reuseKey][]*ReusableFile
	// readContext is the context (fileContext) of the resource file the
	// planning reads, nil where its chain has patches (no reuse);
	// resourceRead is what that read found (see resourceRead).
	readContext  *[32]byte
	resourceRead resourceRead
	// reused and reusable are the linear path's answer of what it reused
	// and of what the next build may reuse (see Built).
	reused   []Reused
	reusable *Reusable
}

var _ filesys.FileSystem = (*buildFS)(nil)

func newBuildFS(ctx context.Context, root string, limits Limits) *buildFS {
	return &buildFS{
		ctx:     ctx,
		root:    root,
		limits:  limits,
		disk:    filesys.MakeFsOnDisk(),
		virtual: make(map[string][]byte),
		served:  make(map[string][]byte),
		vetted:  make(map[string]error),
		patches: make(map[string]patchUse),

		prefetched: make(map[string]int),
		parsed:     make(map[string]*parsedResourceFile),

		maxHeldParses: maxHeldParseSource,

		resourceFiles: make(map[string]bool),

		componentDepth: make(map[string]int),
	}
}

// resolve returns the absolute, cleaned form of path, or an error when the
// build is over, or when path (or the target of a symbolic link on the way)
// lies outside root or inside .git.
func (r *buildFS) resolve(path string) (string, error) {
	if err := r.ctx.Err(); err != nil {
		return "", fmt.Errorf("build abandoned: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", path, err)
	}
	if _, ok := r.virtual[abs]; ok {
		return abs, nil
	}
	if !isWithin(r.root, abs) {
		return "", r.outside(path)
	}
	if r.inGitMetadata(abs) {
		return "", fmt.Errorf("%s is in %s/, Git's metadata, which is not part of the build: refused", r.display(abs), gitMetadataDir)
	}
	// A link is checked where it leads even when nothing is there: a
	// checkout writes committed links as they were written.
	if resolved, err := repofile.ResolveLinks(abs); err == nil {
		if !isWithin(r.root, resolved) {
			return "", fmt.Errorf("%s is a symbolic link to %s, outside the repository root: refused", r.display(abs), resolved)
		}
		if r.inGitMetadata(resolved) {
			return "", fmt.Errorf("%s is a symbolic link into %s/, Git's metadata, which is not part of the build: refused", r.display(abs), gitMetadataDir)
		}
	}
	return abs, nil
}

// inGitMetadata reports whether abs, inside root, is a .git entry or below
// one, at any depth (a submodule's too).
func (r *buildFS) inGitMetadata(abs string) bool {
	for _, part := range strings.Split(r.display(abs), "/") {
		if part == gitMetadataDir {
			return true
		}
	}
	return false
}

func (r *buildFS) outside(path string) error {
	return fmt.Errorf("%s is outside the repository root %s: refused", path, r.root)
}

// display shows path relative to root when it is inside.
func (r *buildFS) display(path string) string {
	if rel, err := filepath.Rel(r.root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}

// refuse records err as a refusal and returns it.
func (r *buildFS) refuse(err error) error {
	for _, known := range r.refusals {
		if known.Error() == err.Error() {
			return err
		}
	}
	r.refusals = append(r.refusals, err)
	return err
}

// isWithin reports whether path is root or below it; both must be absolute
// and clean.
func isWithin(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}

func (r *buildFS) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (r *buildFS) Mkdir(string) error                  { return errReadOnly }
func (r *buildFS) MkdirAll(string) error               { return errReadOnly }
func (r *buildFS) RemoveAll(string) error              { return errReadOnly }
func (r *buildFS) WriteFile(string, []byte) error      { return errReadOnly }

// Open is refused: kustomize reads files whole through ReadFile, where the
// limits and checks apply; an open file would bypass them.
func (r *buildFS) Open(path string) (filesys.File, error) {
	return nil, fmt.Errorf("%s: files of a build are read whole, never opened", r.display(path))
}

func (r *buildFS) IsDir(path string) bool {
	abs, err := r.resolve(path)
	if err != nil {
		return false
	}
	if _, ok := r.virtual[abs]; ok {
		return false
	}
	return r.disk.IsDir(abs)
}

func (r *buildFS) ReadDir(path string) ([]string, error) {
	abs, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	names, err := r.disk.ReadDir(abs)
	if err != nil {
		return nil, err
	}
	visible := names[:0]
	for _, name := range names {
		if name != gitMetadataDir {
			visible = append(visible, name)
		}
	}
	return visible, nil
}

func (r *buildFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	if _, err := r.resolve(path); err != nil {
		return "", "", err
	}
	dir, file, err := r.disk.CleanedAbs(path)
	if err != nil {
		return "", "", err
	}
	if !isWithin(r.root, string(dir)) {
		return "", "", r.outside(path)
	}
	return dir, file, nil
}

func (r *buildFS) Exists(path string) bool {
	abs, err := r.resolve(path)
	if err != nil {
		return false
	}
	if _, ok := r.virtual[abs]; ok {
		return true
	}
	return r.disk.Exists(abs)
}

func (r *buildFS) Glob(pattern string) ([]string, error) {
	if _, err := r.resolve(filepath.Dir(pattern)); err != nil {
		return nil, err
	}
	matches, err := r.disk.Glob(pattern)
	if err != nil {
		return nil, err
	}
	inside := matches[:0]
	for _, m := range matches {
		if _, err := r.resolve(m); err == nil {
			inside = append(inside, m)
		}
	}
	return inside, nil
}

// ReadFile serves a file of the work tree within the limits. A
// kustomization is served only once vetKustomization has accepted it.
func (r *buildFS) ReadFile(path string) ([]byte, error) {
	abs, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	if r.prefetched[abs] > 0 {
		// Read by planResources for this very read of kustomize's, and
		// checked and counted then.
		r.prefetched[abs]--
		return r.served[abs], nil
	}
	content, ok := r.virtual[abs]
	if !ok {
		if content, err = r.readLimited(abs); err != nil {
			return nil, err
		}
		r.served[abs] = content
	}
	if IsKustomizationFile(filepath.Base(abs)) {
		if err := r.vetKustomization(abs, content); err != nil {
			return nil, err
		}
		return content, nil
	}
	if ok {
		return content, nil // generated: neither the author's objects nor their YAML
	}
	// A YAML file is parsed once, for its objects and its typing; any other
	// file kustomize reads is only counted.
	var problems profile.Problems
	var objects int64
	var yamlErr error
	var parsed *parsedResourceFile
	switch {
	case isYAMLFile(abs) && r.planning && r.resourceFiles[abs]:
		// The same name and bytes in the same context as a use of the
		// previous build, whose typing check accepted them: its count is
		// taken, and the file is not parsed (see BuildReusing).
		// A changed file whose previous version had pieces of the same
		// text: those are not parsed either (checkAndCountReusingPieces).
		reused, digest := r.reusableUse(abs, content)
		piecewise := false
		switch {
		case reused != nil:
			objects = reused.Objects
		default:
			if known := r.reusablePieces(abs); known != nil {
				problems, objects, parsed, piecewise = checkAndCountReusingPieces(r.display(abs), content, known)
			}
			if !piecewise {
				problems, objects, parsed, yamlErr = checkAndCountResourceFile(r.display(abs), content)
			}
		}
		r.resourceRead = resourceRead{counted: true, objects: objects, digest: digest, reused: reused}
		if parsed != nil {
			r.resourceRead.pieces = parsed.pieces
		}
	case isYAMLFile(abs):
		if r.resourceFiles[abs] {
			resourceFileParses.Add(1)
		}
		problems, objects, yamlErr = profile.CheckYAMLTypingAndCount(r.display(abs), content)
	default:
		objects = countObjects(content)
	}
	r.objects += objects
	if r.objects > r.limits.MaxObjects {
		return nil, r.refuse(&LimitError{File: r.display(abs), What: "maximum number of objects a build reads",
			Flag: MaxObjectsFlag, Max: r.limits.MaxObjects, Size: r.objects, Objects: true})
	}
	if len(problems) > 0 {
		// kustomize would rewrite or retype these values silently.
		return nil, r.refuse(problems)
	}
	// kustomize would name the file as the kustomization listing it wrote
	// it ("in File: p.yaml").
	if _, isPatch := r.patches[abs]; yamlErr != nil && (r.resourceFiles[abs] || isPatch) {
		return nil, r.refuse(fmt.Errorf("%s: not valid YAML: %w", r.display(abs), yamlErr))
	}
	if use, ok := r.patches[abs]; ok {
		place := fmt.Sprintf("%s: %s entry %q: %s", use.kustomization, use.field, use.entry, r.display(abs))
		if errs := checkPatch(place, content); len(errs) > 0 {
			return nil, r.refuse(errors.Join(errs...))
		}
	}
	if parsed != nil && r.heldParses+int64(len(content)) <= r.maxHeldParses {
		r.parsed[abs], r.heldParses = parsed, r.heldParses+int64(len(content))
	}
	return content, nil
}

// readLimited reads the file at abs, refusing it when it is larger than
// MaxFileSize (with its YAML aliases written out) or would take the build
// past MaxRenderedSize.
func (r *buildFS) readLimited(abs string) ([]byte, error) {
	file, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	tooLarge := func(size int64) error {
		return r.refuse(&LimitError{File: r.display(abs), What: "maximum file size", Flag: MaxFileSizeFlag, Max: r.limits.MaxFileSize, Size: size})
	}
	if info, err := file.Stat(); err == nil && info.Size() > r.limits.MaxFileSize {
		return nil, tooLarge(info.Size())
	}
	// The size can change between Stat and reading; what is read counts.
	content, err := io.ReadAll(io.LimitReader(file, r.limits.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.display(abs), err)
	}
	if int64(len(content)) > r.limits.MaxFileSize {
		return nil, tooLarge(int64(len(content)))
	}
	r.read += int64(len(content))
	if r.read > r.limits.MaxRenderedSize {
		return nil, r.refuse(&LimitError{File: r.display(abs), What: "maximum rendered size, which also bounds what a build reads in all,",
			Flag: MaxRenderedSizeFlag, Max: r.limits.MaxRenderedSize, Size: r.read})
	}
	// An alias is always written with '*': without one, nothing expands.
	if bytes.IndexByte(content, '*') >= 0 {
		if expandedYAMLSize(content, r.limits.MaxFileSize) > r.limits.MaxFileSize {
			return nil, r.refuse(&LimitError{File: r.display(abs), What: "maximum file size (with its YAML aliases written out)",
				Flag: MaxFileSizeFlag, Max: r.limits.MaxFileSize})
		}
	}
	return content, nil
}

func (r *buildFS) Walk(path string, walkFn filepath.WalkFunc) error {
	abs, err := r.resolve(path)
	if err != nil {
		return err
	}
	return r.disk.Walk(abs, func(p string, info os.FileInfo, err error) error {
		if info != nil && info.IsDir() && info.Name() == gitMetadataDir {
			return filepath.SkipDir
		}
		if _, outside := r.resolve(p); outside != nil {
			return walkFn(p, info, outside)
		}
		return walkFn(p, info, err)
	})
}

// walkWorkTree walks the work tree below dir like filepath.WalkDir, without
// .git/ and refusing what leaves root.
func (r *buildFS) walkWorkTree(dir string, fn fs.WalkDirFunc) error {
	return filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() && entry.Name() == gitMetadataDir {
			return filepath.SkipDir
		}
		if _, err := r.resolve(path); err != nil {
			return err
		}
		return fn(path, entry, nil)
	})
}

// isYAMLFile reports whether path names a YAML file by its extension.
func isYAMLFile(path string) bool {
	ext := filepath.Ext(path)
	return ext == ".yaml" || ext == ".yml"
}
