package profile

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func decodeString(t *testing.T, file, stream string) ([]Object, Problems) {
	t.Helper()
	docs, err := SplitDocuments(file, strings.NewReader(stream))
	if err != nil {
		t.Fatalf("splitting %s: %v", file, err)
	}
	return DecodeDocuments(docs)
}

func TestDecodeDocumentsReportsEveryProblemWithFileObjectAndField(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []string
	}{
		{
			name: "an unknown field is named with its path, not dropped",
			stream: `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  kubernetes:
    versions:
    - version: 1.31.0
      lifecylce: []
`,
			want: []string{`profiles.yaml: CloudProfile/aws: spec.kubernetes.versions[0].lifecylce: unknown field: the API has no such field (check spelling and indentation)`},
		},
		{
			name: "a field given twice is a problem",
			stream: `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  type: gcp
`,
			want: []string{`profiles.yaml: document 1: not valid YAML: yaml: unmarshal errors: line 7: key "type" already set in map`},
		},
		{
			name: "another kind is named",
			stream: `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: garden
`,
			want: []string{`profiles.yaml: ConfigMap/garden/settings: unsupported kind ConfigMap (apiVersion "v1"): only CloudProfile and NamespacedCloudProfile of core.profilesync.io/v1alpha1 or core.gardener.cloud/v1beta1 are read`},
		},
		{
			name: "a profile kind of another API version is named",
			stream: `apiVersion: core.gardener.cloud/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  kubernetes:
    versions:
    - version: 1.31.0
`,
			want: []string{`profiles.yaml: CloudProfile/aws: apiVersion: Unsupported value: "core.gardener.cloud/v1alpha1": supported values: "core.profilesync.io/v1alpha1", "core.gardener.cloud/v1beta1"`},
		},
		{
			name:   "a document without kind is counted",
			stream: "apiVersion: v1\nmetadata:\n  name: x\n---\n# only a comment\n---\nfoo: [\n",
			want: []string{
				"profiles.yaml: document 1: kind is missing: expected CloudProfile or NamespacedCloudProfile",
				"profiles.yaml: document 2: not valid YAML: yaml: line 1: did not find expected node content",
			},
		},
		{
			name:   "a profile without name",
			stream: "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nspec:\n  type: aws\n  kubernetes:\n    versions: [{version: 1.31.0}]\n",
			want:   []string{"profiles.yaml: CloudProfile/: metadata.name: Required value: every profile needs a name"},
		},
		{
			name:   "a value of the wrong type is named as the API server names it",
			stream: "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  type: aws\n  kubernetes:\n    versions: 1.31.0\n",
			want:   []string{`profiles.yaml: CloudProfile/aws: spec.kubernetes.versions: Invalid value: "string": spec.kubernetes.versions in body must be of type array: "string"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objects, problems := decodeString(t, "profiles.yaml", tt.stream)
			g.Expect(objects).To(BeEmpty())
			g.Expect(problems.Lines()).To(Equal(tt.want))
		})
	}
}

func TestDecodeDocumentsReadsGardenerProfilesAsOurs(t *testing.T) {
	g := NewWithT(t)
	objects, problems := decodeString(t, "gardener.yaml", `apiVersion: core.gardener.cloud/v1beta1
kind: CloudProfile
metadata:
  name: local
spec:
  type: local
  kubernetes:
    versions:
    - version: 1.26.0
      classification: supported
      expirationDate: "2024-06-01T00:00:00Z"
---
apiVersion: core.gardener.cloud/v1beta1
kind: NamespacedCloudProfile
metadata:
  name: local
  namespace: shoot
spec:
  parent:
    kind: CloudProfile
    name: local
`)
	g.Expect(problems).To(BeEmpty())
	g.Expect(objects).To(HaveLen(2))
	g.Expect(objects[0].CloudProfile.APIVersion).To(Equal(v1alpha1.GroupVersion.String()))
	g.Expect(objects[0].CloudProfile.Spec.Kubernetes.Versions[0].ExpirationDate.UTC().Format("2006-01-02")).To(Equal("2024-06-01"))
	g.Expect(objects[1].NamespacedCloudProfile.APIVersion).To(Equal(v1alpha1.GroupVersion.String()))
	g.Expect(objects[1].Ref()).To(Equal("NamespacedCloudProfile/shoot/local"))
}

func TestDecodeDocumentsDoesNotWriteDefaults(t *testing.T) {
	g := NewWithT(t)
	stream := `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  kubernetes:
    versions:
    - version: 1.31.0
  machineImages:
  - name: gardenlinux
    versions:
    - version: "1592.4"
  type: aws
`
	objects, problems := decodeString(t, "profiles.yaml", stream)
	g.Expect(problems).To(BeEmpty())
	g.Expect(objects[0].CloudProfile.Spec.MachineImages[0].UpdateStrategy).To(BeNil())

	var out bytes.Buffer
	g.Expect(EncodeDocuments(&out, objects)).To(Succeed())
	g.Expect(out.String()).To(Equal(stream + "status: {}\n"))
}

// TestDecodeDocumentsKeepsAProviderConfigOfAnyJSONValue: Gardener's
// providerConfig is a RawExtension, which takes any JSON value, and its own
// example profile holds a placeholder string there; a profile that Gardener
// accepts must not be refused for it, nor lose it.
func TestDecodeDocumentsKeepsAProviderConfigOfAnyJSONValue(t *testing.T) {
	tests := []struct {
		name, yaml, json string
	}{
		{name: "a placeholder string", yaml: "<some-provider-specific-cloudprofile-config>", json: `"<some-provider-specific-cloudprofile-config>"`},
		{name: "a list", yaml: "[a, 1]", json: `["a",1]`},
		{name: "a number", yaml: "42", json: `42`},
		{name: "an object", yaml: "{kind: CloudProfileConfig}", json: `{"kind":"CloudProfileConfig"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objects, problems := decodeString(t, "gardener.yaml", `apiVersion: core.gardener.cloud/v1beta1
kind: CloudProfile
metadata:
  name: local
spec:
  type: local
  kubernetes:
    versions:
    - version: 1.31.0
  providerConfig: `+tt.yaml+`
---
apiVersion: core.gardener.cloud/v1beta1
kind: NamespacedCloudProfile
metadata:
  name: local
  namespace: shoot
spec:
  parent:
    kind: CloudProfile
    name: local
  providerConfig: `+tt.yaml+`
`)
			g.Expect(problems).To(BeEmpty())
			g.Expect(objects).To(HaveLen(2))
			g.Expect(string(objects[0].CloudProfile.Spec.ProviderConfig.Raw)).To(MatchJSON(tt.json))
			g.Expect(string(objects[1].NamespacedCloudProfile.Spec.ProviderConfig.Raw)).To(MatchJSON(tt.json))
		})
	}
}
