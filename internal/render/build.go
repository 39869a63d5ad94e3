package render

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Build renders the directory path of the repository checked out at root,
// the way `kustomize build` does, and returns one Document per object in
// kustomize's output order. path is relative to root (an absolute path must
// lie inside root). Each Document's File is the root-relative path of the
// file the object was read from, taken from kustomize's origin tracking, so
// that problems name the file a person has to edit.
//
// The build is confined to the repository:
//
//   - nothing outside root is read: a path, base or resource that leaves root
//     (also through a symbolic link) is refused;
//   - remote bases and resources (http(s) URLs, Git repositories) are refused
//     with an error naming the kustomization file and the entry, before
//     kustomize runs, because kustomize would fetch them on sight; a build
//     never touches the network;
//   - exec and container plugins and Helm charts are not run.
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
func Build(root, path string) ([]Document, error) {
	rootfs, target, err := newRootedFS(root, path)
	if err != nil {
		return nil, err
	}
	kustomizationPath, content, err := topKustomization(rootfs, target)
	if err != nil {
		return nil, err
	}
	scan := kustomizationScan{fs: rootfs, visited: make(map[string]bool)}
	scan.scan(kustomizationPath, content)
	if err := scan.err(); err != nil {
		return nil, err
	}
	withOrigins, err := addOriginAnnotations(content)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rootfs.display(kustomizationPath), err)
	}
	rootfs.virtual[kustomizationPath] = withOrigins

	options := krusty.MakeDefaultOptions()
	options.LoadRestrictions = types.LoadRestrictionsNone
	options.PluginConfig = types.DisabledPluginConfig()
	resources, err := krusty.MakeKustomizer(options).Run(rootfs, target)
	if err != nil {
		return nil, fmt.Errorf("kustomize build of %s: %w", rootfs.display(target), err)
	}

	relTarget := rootfs.display(target)
	files := make([]string, resources.Size())
	for i, res := range resources.Resources() {
		files[i] = rootfs.display(kustomizationPath)
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
	for i, res := range resources.Resources() {
		data, err := res.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("%s: encoding %s: %w", files[i], res.CurId(), err)
		}
		docs[i] = Document{File: files[i], Data: data}
	}
	return docs, nil
}

// newRootedFS returns the confined file system for root and the absolute
// directory to build.
func newRootedFS(root, path string) (*rootedFS, string, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, "", fmt.Errorf("repository root %s: %w", root, err)
	}
	absRoot, err = filepath.EvalSymlinks(absRoot)
	if err != nil {
		return nil, "", fmt.Errorf("repository root %s: %w", root, err)
	}
	rootfs := &rootedFS{root: absRoot, disk: filesys.MakeFsOnDisk(), virtual: make(map[string][]byte)}
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
func topKustomization(rootfs *rootedFS, dir string) (string, []byte, error) {
	for _, name := range kustomizationFileNames {
		path := filepath.Join(dir, name)
		if !rootfs.Exists(path) {
			continue
		}
		content, err := rootfs.ReadFile(path)
		if err != nil {
			return "", nil, fmt.Errorf("reading %s: %w", rootfs.display(path), err)
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
func plainDirectoryResources(rootfs *rootedFS, dir string) ([]string, error) {
	var resources []string
	err := filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if _, err := rootfs.resolve(path); err != nil {
			return err
		}
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
