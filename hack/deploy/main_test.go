package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/types"
)

// TestRenderedDeploymentRunsTheImageAsked renders config/default through
// `make deploy`'s code and checks the operator's Deployment runs the image
// given, not the shipped ghcr.io one, and that the Namespace comes first.
func TestRenderedDeploymentRunsTheImageAsked(t *testing.T) {
	for _, tc := range []struct{ name, image string }{
		{"a registry with a port and a tag", "registry.example:5000/team/profilesync:v1.2.3"},
		{"a digest", "registry.example/profilesync@sha256:" + strings.Repeat("ab", 32)},
		{"a tag and a digest", "registry.example/profilesync:v1@sha256:" + strings.Repeat("cd", 32)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var out bytes.Buffer
			g.Expect(run([]string{"--image", tc.image, "--config", filepath.Join("..", "..", "config")}, &out)).To(Succeed())
			g.Expect(out.String()).To(HavePrefix("apiVersion: v1\nkind: Namespace\n"), "kubectl applies in order: the Namespace first")
			var images []string
			decoder := yaml.NewYAMLOrJSONDecoder(&out, 4096)
			for {
				var deployment appsv1.Deployment
				if err := decoder.Decode(&deployment); err != nil {
					break
				}
				if deployment.Kind != "Deployment" {
					continue
				}
				g.Expect(deployment.Name).To(Equal("profilesync-controller-manager"))
				for _, c := range deployment.Spec.Template.Spec.Containers {
					images = append(images, c.Image)
				}
			}
			g.Expect(images).To(Equal([]string{tc.image}))
		})
	}
}

func TestParseImage(t *testing.T) {
	for _, tc := range []struct {
		name, image string
		want        types.Image
		wantErr     string
	}{
		{name: "a name and a tag set both", image: "reg/profilesync:v1",
			want: types.Image{Name: shippedImage, NewName: "reg/profilesync", NewTag: "v1"}},
		{name: "a registry's port is not a tag", image: "reg:5000/profilesync:v1",
			want: types.Image{Name: shippedImage, NewName: "reg:5000/profilesync", NewTag: "v1"}},
		{name: "an empty image is refused naming the make variable", image: "", wantErr: "make deploy IMG="},
		{name: "an image without a tag or digest is refused", image: "reg:5000/profilesync", wantErr: "give a tag"},
		{name: "an empty tag is refused", image: "reg/profilesync:", wantErr: "the tag after : is empty"},
		{name: "a short digest is refused", image: "reg/profilesync@sha256:abc", wantErr: "64 hex digits"},
		{name: "an empty name is refused", image: ":v1", wantErr: "the image name is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parseImage(tc.image)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
