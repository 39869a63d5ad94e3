package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/yaml"
)

// Build renders the directory path of the repository checked out at root,
// the way `kustomize build` does, and returns one Document per object in
// kustomize's output order. path is relative to root (an absolute path must
// lie inside root). Each Document's File is the root-relative path of the
// file the object was read from, taken from kustomize's origin tracking, so
// that problems name the file a person has to edit.
//
// A commit is untrusted input, so the build reads the work tree and nothing
// else (see buildFS):
//
//   - nothing outside root is read, nor anything in .git/: a path, base or
//     resource that leaves root or enters .git/ (also through a symbolic
//     link) is refused;
//   - every location a kustomization or a builtin plugin's configuration
//     makes kustomize load must be a file or directory of the work tree; a
//     URL or Git address is refused, naming the file and the entry, before
//     kustomize could fetch it: a build never touches the network;
//   - exec, container and Go plugins and Helm charts never run;
//   - it stays within limits (see Limits), and is abandoned when ctx is done:
//     Build then returns ctx's error at once, and the build stops at its
//     next file access.
//
// A directory without a kustomization file is read like Flux's
// kustomize-controller reads one: as if it had a kustomization listing every
// *.yaml and *.yml file below it (sorted, hidden directories skipped) and, in
// place of their files, every subdirectory that has a kustomization of its
// own.
//
// Files may be referenced from anywhere inside root (kustomize's "load
// restrictor" is off, as in Flux), so an overlay can use a patch file kept
// next to its base.
func Build(ctx context.Context, root, path string, limits Limits) ([]Document, error) {
	buildFS, target, err := confineBuild(ctx, root, path, limits)
	if err != nil {
		return nil, err
	}
	type outcome struct {
		docs []Document
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			// kustomize has panicked on odd input before; a commit must not
			// take the process down with it.
			if recovered := recover(); recovered != nil {
				done <- outcome{err: fmt.Errorf("kustomize build of %s failed: %v", buildFS.display(target), recovered)}
			}
		}()
		docs, err := buildFS.build(target)
		done <- outcome{docs, err}
	}()
	select {
	case result := <-done:
		return result.docs, result.err
	case <-ctx.Done():
		return nil, fmt.Errorf("kustomize build of %s abandoned: %w", buildFS.display(target), context.Cause(ctx))
	}
}

// kustomizeRuns lets one kustomize build run at a time. kustomize keeps the
// OpenAPI schema that decides how patches merge in a process-wide variable,
// which a kustomization's openapi field replaces: two builds at once would
// merge with each other's schema, and one commit could change how another
// ProfileSync's revision renders.
var kustomizeRuns sync.Mutex

// buildOptions are kustomize's options for every build: no load restrictor
// (buildFS confines it), builtin plugins only.
func buildOptions() *krusty.Options {
	options := krusty.MakeDefaultOptions()
	options.LoadRestrictions = types.LoadRestrictionsNone
	options.PluginConfig = types.DisabledPluginConfig()
	return options
}

// build runs kustomize on target; see Build.
func (r *buildFS) build(target string) ([]Document, error) {
	kustomizationPath, content, err := topKustomization(r, target)
	if err != nil {
		return nil, err
	}
	withOrigins, err := addOriginAnnotations(content)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.display(kustomizationPath), err)
	}
	r.virtual[kustomizationPath] = withOrigins

	kustomizeRuns.Lock()
	// krusty.Run resets the schema, but keeps a custom one a previous build
	// set through its openapi field: cleared here, so each build starts from
	// kustomize's default.
	openapi.ResetOpenAPI()
	resources, err := krusty.MakeKustomizer(buildOptions()).Run(r, target)
	kustomizeRuns.Unlock()
	if len(r.refusals) > 0 {
		// kustomize reports a refused read as whatever it tried next; the
		// refusals say what was wrong and where.
		return nil, errors.Join(r.refusals...)
	}
	if err != nil {
		return nil, fmt.Errorf("kustomize build of %s: %w", r.display(target), err)
	}

	relTarget := r.display(target)
	files := make([]string, resources.Size())
	for i, res := range resources.Resources() {
		files[i] = r.display(kustomizationPath)
		origin, err := res.GetOrigin()
		if err != nil || origin == nil {
			continue
		}
		originPath := origin.Path
		if originPath == "" {
			originPath = origin.ConfiguredIn
		}
		if originPath != "" {
			files[i] = filepath.ToSlash(filepath.Join(relTarget, originPath))
		}
	}
	// The origin annotation is how kustomize tells us the file; it is not
	// part of the profile and must not be applied.
	if err := resources.RemoveOriginAnnotations(); err != nil {
		return nil, fmt.Errorf("kustomize build of %s: removing origin annotations: %w", relTarget, err)
	}
	docs := make([]Document, resources.Size())
	var rendered int64
	for i, res := range resources.Resources() {
		data, err := res.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("%s: encoding %s: %w", files[i], res.CurId(), err)
		}
		rendered += int64(len(data))
		if rendered > r.limits.MaxRenderedSize {
			return nil, &LimitError{File: relTarget, What: "maximum rendered size", Flag: MaxRenderedSizeFlag,
				Max: r.limits.MaxRenderedSize, Size: rendered}
		}
		docs[i] = Document{File: files[i], Data: data}
	}
	return docs, nil
}

// confineBuild returns the confined file system for root and the absolute
// directory to build.
func confineBuild(ctx context.Context, root, path string, limits Limits) (*buildFS, string, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, "", fmt.Errorf("repository root %s: %w", root, err)
	}
	absRoot, err = filepath.EvalSymlinks(absRoot)
	if err != nil {
		return nil, "", fmt.Errorf("repository root %s: %w", root, err)
	}
	rootfs := newBuildFS(ctx, absRoot, limits.orDefaults())
	target := path
	if !filepath.IsAbs(target) {
		target = filepath.Join(absRoot, path)
	}
	target = filepath.Clean(target)
	if _, err := rootfs.resolve(target); err != nil {
		return nil, "", fmt.Errorf("build path %q: %w", path, err)
	}
	info, err := os.Stat(target)
	if err != nil {
		return nil, "", fmt.Errorf("build path %q: %w", path, err)
	}
	if !info.IsDir() {
		return nil, "", fmt.Errorf("build path %q is not a directory", path)
	}
	return rootfs, target, nil
}

// topKustomization returns the path and content of the kustomization file in
// dir, or of one generated for a plain directory of YAML files.
func topKustomization(rootfs *buildFS, dir string) (string, []byte, error) {
	for _, name := range kustomizationFileNames {
		path := filepath.Join(dir, name)
		if !rootfs.Exists(path) {
			continue
		}
		content, err := rootfs.ReadFile(path)
		if err != nil {
			return "", nil, err // it names the file
		}
		return path, content, nil
	}
	resources, err := plainDirectoryResources(rootfs, dir)
	if err != nil {
		return "", nil, err
	}
	content, err := yaml.Marshal(types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: resources,
	})
	if err != nil {
		return "", nil, fmt.Errorf("generating a kustomization for %s: %w", rootfs.display(dir), err)
	}
	return filepath.Join(dir, kustomizationFileNames[0]), content, nil
}

// plainDirectoryResources lists, relative to dir, the YAML files below dir
// and the subdirectories that have a kustomization of their own.
func plainDirectoryResources(rootfs *buildFS, dir string) ([]string, error) {
	var resources []string
	err := rootfs.walkWorkTree(dir, func(path string, entry fs.DirEntry, _ error) error {
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if entry.IsDir() {
			if path == dir {
				return nil
			}
			if strings.HasPrefix(entry.Name(), ".") {
				return filepath.SkipDir
			}
			for _, name := range kustomizationFileNames {
				if rootfs.Exists(filepath.Join(path, name)) {
					resources = append(resources, filepath.ToSlash(rel))
					return filepath.SkipDir
				}
			}
			return nil
		}
		if ext := filepath.Ext(entry.Name()); ext == ".yaml" || ext == ".yml" {
			resources = append(resources, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing YAML files below %s: %w", rootfs.display(dir), err)
	}
	sort.Strings(resources)
	return resources, nil
}

// addOriginAnnotations returns the kustomization with originAnnotations added
// to buildMetadata, so that kustomize records every object's source file.
// kustomize passes the top-level build options down to every base.
func addOriginAnnotations(content []byte) ([]byte, error) {
	var kustomization map[string]any
	if err := yaml.Unmarshal(content, &kustomization); err != nil {
		return nil, fmt.Errorf("not a kustomization: %w", err)
	}
	if kustomization == nil {
		kustomization = map[string]any{}
	}
	metadata, _ := kustomization["buildMetadata"].([]any)
	for _, option := range metadata {
		if option == types.OriginAnnotations {
			return content, nil
		}
	}
	kustomization["buildMetadata"] = append(metadata, types.OriginAnnotations)
	return yaml.Marshal(kustomization)
}
