package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The Dockerfile copies the manager's source directories one by one, and
// .dockerignore lets only those into the build context. A new package the
// manager imports must be added to both, or the image does not build; this
// test notices it here, where there is no Docker engine.
func TestDockerfileCopiesEveryPackageOfTheManager(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join("..", "..")

	list := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	list.Dir = root
	out, err := list.Output()
	g.Expect(err).NotTo(HaveOccurred(), "go list the manager's packages")
	module := exec.Command("go", "list", "-m")
	module.Dir = root
	modulePath, err := module.Output()
	g.Expect(err).NotTo(HaveOccurred(), "go list the module")
	prefix := strings.TrimSpace(string(modulePath))

	copied := dockerfileCopySources(t, filepath.Join(root, "Dockerfile"))
	allowed := dockerignoreExceptions(t, filepath.Join(root, ".dockerignore"))
	g.Expect(copied).To(ContainElements("go.mod", "go.sum", "*.go"))
	g.Expect(allowed).To(ContainElements("go.mod", "go.sum", "*.go"))

	var packages int
	for _, pkg := range strings.Fields(string(out)) {
		if pkg != prefix && !strings.HasPrefix(pkg, prefix+"/") {
			continue
		}
		packages++
		dir := strings.TrimPrefix(strings.TrimPrefix(pkg, prefix), "/")
		if dir == "" {
			continue // the root package: *.go
		}
		g.Expect(coversDirectory(copied, dir+"/")).To(BeTrue(), "the Dockerfile copies %s/ or a directory above it (package %s)", dir, pkg)
		g.Expect(coversDirectory(allowed, dir)).To(BeTrue(), ".dockerignore lets %s or a directory above it into the build context (package %s)", dir, pkg)
	}
	g.Expect(packages).To(BeNumerically(">", 1), "the manager's own packages")
}

// dockerfileCopySources returns the sources of the COPY instructions that
// copy from the build context (not --from another stage).
func dockerfileCopySources(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatalf("open Dockerfile: %v", err)
	}
	defer f.Close()
	var sources []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 3 || fields[0] != "COPY" || strings.HasPrefix(fields[1], "--from") {
			continue
		}
		sources = append(sources, fields[1:len(fields)-1]...)
	}
	if err := scanner.Err(); err != nil {
		t.Fatalf("read Dockerfile: %v", err)
	}
	return sources
}

// dockerignoreExceptions returns the patterns .dockerignore re-includes
// (!pattern), cleaned as Docker cleans them.
func dockerignoreExceptions(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("read .dockerignore: %v", err)
	}
	var exceptions []string
	for _, line := range strings.Split(string(data), "\n") {
		if pattern, ok := strings.CutPrefix(strings.TrimSpace(line), "!"); ok {
			exceptions = append(exceptions, path.Clean(pattern))
		}
	}
	return exceptions
}

// coversDirectory reports whether one of paths is dir or a directory above
// it: copying config/crd/ serves the package config/crd without the rest of
// config/.
func coversDirectory(paths []string, dir string) bool {
	for _, p := range paths {
		trimmed := strings.TrimSuffix(p, "/")
		if trimmed != "" && (dir == p || strings.HasPrefix(strings.TrimSuffix(dir, "/")+"/", trimmed+"/")) {
			return true
		}
	}
	return false
}
