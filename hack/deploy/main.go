// Command deploy renders config/default with the operator's image set to
// --image and prints it, for `make deploy` and `make undeploy` to pipe into
// kubectl. It is kubebuilder's `kustomize edit set image` without the
// kustomize binary: the build runs kustomize's krusty in-process on a copy of
// config/ in memory, with one more kustomization on top that sets the image,
// so the checkout is never edited.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// shippedImage is the image name config/manager/manager.yaml runs; the
// rendered Deployment runs --image instead.
const shippedImage = "ghcr.io/profilesync/profilesync"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	flags := flag.NewFlagSet("deploy", flag.ContinueOnError)
	image := flags.String("image", "", "The operator's image, REGISTRY/NAME:TAG or REGISTRY/NAME@sha256:DIGEST (make deploy IMG=...).")
	configDir := flags.String("config", "config", "The config/ directory of the ProfileSync checkout.")
	if err := flags.Parse(args); err != nil {
		return err
	}
	rendered, err := render(*configDir, *image)
	if err != nil {
		return err
	}
	_, err = out.Write(rendered)
	return err
}

// deployDir is the kustomization, next to config/default in the in-memory
// copy, that sets the image.
const deployDir = "/config/deploy-image"

// render builds configDir/default with the operator's image set to image.
func render(configDir, image string) ([]byte, error) {
	override, err := parseImage(image)
	if err != nil {
		return nil, err
	}
	memory := filesys.MakeFsInMemory()
	if err := copyTree(configDir, "/config", memory); err != nil {
		return nil, err
	}
	kustomization, err := yaml.Marshal(types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{"../default"},
		Images:    []types.Image{override},
	})
	if err != nil {
		return nil, err
	}
	if err := memory.WriteFile(path.Join(deployDir, "kustomization.yaml"), kustomization); err != nil {
		return nil, err
	}
	options := krusty.MakeDefaultOptions()
	// Namespaces and CRDs first, webhook configurations last, as
	// `kubectl apply -k` orders them: kubectl applies in the order given,
	// and the operator's ServiceAccount cannot precede its Namespace.
	options.Reorder = krusty.ReorderOptionLegacy
	resources, err := krusty.MakeKustomizer(options).Run(memory, deployDir)
	if err != nil {
		return nil, fmt.Errorf("build %s with image %s: %w", filepath.Join(configDir, "default"), image, err)
	}
	return resources.AsYaml()
}

// parseImage splits image into the name, tag and digest kustomize's image
// transformer sets on the shipped image.
func parseImage(image string) (types.Image, error) {
	override := types.Image{Name: shippedImage}
	if image == "" {
		return override, errors.New("--image is empty: give the image you built and pushed, REGISTRY/NAME:TAG (make deploy IMG=...)")
	}
	if strings.ContainsAny(image, " \t\n") {
		return override, fmt.Errorf("--image %q: an image reference has no white space", image)
	}
	name := image
	if before, digest, found := strings.Cut(image, "@"); found {
		if !strings.HasPrefix(digest, "sha256:") || len(digest) != len("sha256:")+64 {
			return override, fmt.Errorf("--image %q: the digest after @ must be sha256: and 64 hex digits", image)
		}
		name, override.Digest = before, digest
	}
	// A colon after the last slash starts the tag; one before it is a
	// registry's port.
	if colon := strings.LastIndex(name, ":"); colon > strings.LastIndex(name, "/") {
		if colon == len(name)-1 {
			return override, fmt.Errorf("--image %q: the tag after : is empty", image)
		}
		name, override.NewTag = name[:colon], name[colon+1:]
	}
	if name == "" || strings.HasSuffix(name, "/") {
		return override, fmt.Errorf("--image %q: the image name is empty", image)
	}
	if override.NewTag == "" && override.Digest == "" {
		return override, fmt.Errorf("--image %q: give a tag (:TAG) or a digest (@sha256:...), so the cluster runs the build you mean", image)
	}
	override.NewName = name
	return override, nil
}

// copyTree copies the regular files under dir on disk to target in memory.
func copyTree(dir, target string, memory filesys.FileSystem) error {
	return filepath.WalkDir(dir, func(file string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !entry.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, file)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		return memory.WriteFile(path.Join(target, filepath.ToSlash(rel)), data)
	})
}
