package render

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// kustomizationFileNames are the names kustomize recognises, in the order it
// tries them.
var kustomizationFileNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// kustomizationScan checks, before kustomize sees them, every kustomization
// a build will read: kustomize fetches a remote resource as soon as it meets
// one (an http(s) file, or a Git URL it clones by running git), so remote
// entries must be refused before the build starts, not during it.
type kustomizationScan struct {
	fs      *rootedFS
	visited map[string]bool
	errs    []error
}

// scan checks the kustomization file at path (absolute) with content, and
// the kustomizations of the local directories it refers to.
func (s *kustomizationScan) scan(path string, content []byte) {
	if s.visited[path] {
		return
	}
	s.visited[path] = true
	file := s.fs.display(path)
	var k types.Kustomization
	if err := yaml.Unmarshal(content, &k); err != nil {
		s.errs = append(s.errs, fmt.Errorf("%s: not a kustomization: %w", file, err))
		return
	}
	dir := filepath.Dir(path)

	// Entries kustomize may read as a directory, and so as a Git repository.
	directories := map[string][]string{
		"resources":    k.Resources,
		"bases":        k.Bases,
		"components":   k.Components,
		"generators":   k.Generators,
		"transformers": k.Transformers,
		"validators":   k.Validators,
	}
	for _, field := range []string{"resources", "bases", "components", "generators", "transformers", "validators"} {
		for _, entry := range directories[field] {
			if strings.Contains(entry, "\n") {
				continue // an inline generator or transformer configuration, not a location
			}
			s.checkDirectoryEntry(file, dir, field, entry)
		}
	}

	// Entries kustomize reads as files, which it fetches when they are URLs.
	files := map[string][]string{
		"crds":           k.Crds,
		"configurations": k.Configurations,
	}
	for _, p := range k.PatchesStrategicMerge {
		if !strings.Contains(string(p), "\n") {
			files["patchesStrategicMerge"] = append(files["patchesStrategicMerge"], string(p))
		}
	}
	for _, p := range k.Patches {
		files["patches"] = appendNonEmpty(files["patches"], p.Path)
	}
	for _, p := range k.PatchesJson6902 {
		files["patchesJson6902"] = appendNonEmpty(files["patchesJson6902"], p.Path)
	}
	for _, r := range k.Replacements {
		files["replacements"] = appendNonEmpty(files["replacements"], r.Path)
	}
	files["openapi"] = appendNonEmpty(nil, k.OpenAPI["path"])
	for _, g := range k.ConfigMapGenerator {
		files["configMapGenerator"] = append(files["configMapGenerator"], generatorFiles(g.GeneratorArgs)...)
	}
	for _, g := range k.SecretGenerator {
		files["secretGenerator"] = append(files["secretGenerator"], generatorFiles(g.GeneratorArgs)...)
	}
	for _, field := range []string{"crds", "configurations", "patchesStrategicMerge", "patches", "patchesJson6902", "replacements", "openapi", "configMapGenerator", "secretGenerator"} {
		for _, entry := range files[field] {
			s.checkFileEntry(file, dir, field, entry)
		}
	}

	if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 {
		s.errs = append(s.errs, fmt.Errorf("%s: helmCharts: refused: inflating a chart runs the helm binary and may fetch the chart from the network; render it into the repository instead", file))
	}
}

// checkDirectoryEntry checks an entry that names a file or a directory and
// scans the kustomization of a directory.
func (s *kustomizationScan) checkDirectoryEntry(file, dir, field, entry string) {
	if !s.checkFileEntry(file, dir, field, entry) {
		return
	}
	target := filepath.Join(dir, entry)
	if !s.fs.Exists(target) {
		s.errs = append(s.errs, fmt.Errorf("%s: %s entry %q: no such file or directory in the repository", file, field, entry))
		return
	}
	if !s.fs.IsDir(target) {
		return
	}
	for _, name := range kustomizationFileNames {
		path := filepath.Join(target, name)
		if !s.fs.Exists(path) {
			continue
		}
		content, err := s.fs.ReadFile(path)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("%s: %s entry %q: %w", file, field, entry, err))
			return
		}
		s.scan(path, content)
		return
	}
}

// checkFileEntry refuses an entry that is remote or leaves the repository
// root; it reports whether the entry passed.
func (s *kustomizationScan) checkFileEntry(file, dir, field, entry string) bool {
	if isRemoteLocation(entry) {
		s.errs = append(s.errs, fmt.Errorf("%s: %s entry %q: remote bases and resources are refused: a build reads only the repository, never the network; vendor it into the repository", file, field, entry))
		return false
	}
	if filepath.IsAbs(entry) {
		s.errs = append(s.errs, fmt.Errorf("%s: %s entry %q: absolute paths are refused: use a path relative to the kustomization", file, field, entry))
		return false
	}
	if _, err := s.fs.resolve(filepath.Join(dir, entry)); err != nil {
		s.errs = append(s.errs, fmt.Errorf("%s: %s entry %q: %w", file, field, entry, err))
		return false
	}
	return true
}

func (s *kustomizationScan) err() error {
	return errors.Join(s.errs...)
}

// isRemoteLocation reports whether kustomize would fetch entry from the
// network rather than read it from disk: a URL with a scheme (http, https,
// ssh, file and git:: forms), a github.com path, or an scp-like
// user@host:path address. These are the forms kustomize recognises as
// remote.
func isRemoteLocation(entry string) bool {
	lower := strings.ToLower(strings.TrimSpace(entry))
	lower = strings.TrimPrefix(lower, "git::")
	if strings.Contains(lower, "://") || strings.HasPrefix(lower, "github.com/") || strings.HasPrefix(lower, "github.com:") {
		return true
	}
	at := strings.Index(lower, "@")
	return at > 0 && !strings.Contains(lower[:at], "/") && strings.ContainsAny(lower[at:], ":/")
}

// generatorFiles returns the paths a config map or secret generator reads:
// files (written "path" or "key=path") and env files.
func generatorFiles(args types.GeneratorArgs) []string {
	var paths []string
	for _, source := range args.FileSources {
		if _, path, found := strings.Cut(source, "="); found {
			source = path
		}
		paths = append(paths, source)
	}
	paths = append(paths, args.EnvSources...)
	return appendNonEmpty(paths, args.EnvSource)
}

func appendNonEmpty(list []string, value string) []string {
	if value == "" {
		return list
	}
	return append(list, value)
}
