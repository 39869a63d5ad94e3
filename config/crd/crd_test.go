package crd

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

func TestDefinitionsAreTheCRDsKustomizeInstalls(t *testing.T) {
	g := NewWithT(t)
	definitions, err := Definitions()
	g.Expect(err).NotTo(HaveOccurred())

	data, err := os.ReadFile("kustomization.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	g.Expect(yaml.Unmarshal(data, &kustomization)).To(Succeed())
	onDisk, err := filepath.Glob(filepath.Join("bases", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kustomization.Resources).To(ConsistOf(onDisk), "every generated CRD is installed")
	g.Expect(definitions).To(HaveLen(len(onDisk)), "every generated CRD is embedded")

	var names []string
	for _, d := range definitions {
		names = append(names, d.Name)
		for _, v := range d.Spec.Versions {
			g.Expect(v.Schema).NotTo(BeNil(), "%s %s has a schema", d.Name, v.Name)
			g.Expect(v.Schema.OpenAPIV3Schema).NotTo(BeNil(), "%s %s has a schema", d.Name, v.Name)
		}
	}
	g.Expect(names).To(ContainElements("cloudprofiles.core.profilesync.io", "namespacedcloudprofiles.core.profilesync.io"))
}
