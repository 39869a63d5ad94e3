package profile

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/merge"
)

const namespacedProfileOf = `apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: %s
  namespace: %s
spec:
  parent:
    kind: CloudProfile
    name: %s
`

func TestValidateReportsEveryProblemOfTheSet(t *testing.T) {
	g := NewWithT(t)
	objects, problems := decodeString(t, "set.yaml", fmt.Sprintf(minimalCloudProfile, "aws")+"---\n"+
		fmt.Sprintf(minimalCloudProfile, "aws")+"---\n"+
		fmt.Sprintf(namespacedProfileOf, "team-a", "team-a", "gcp")+"---\n"+
		fmt.Sprintf(namespacedProfileOf, "no-namespace", "", "aws")+"---\n"+
		`apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: broken
  namespace: garden
spec:
  type: aws
  machineImages: [{name: local, versions: [{version: 1.0.0}]}]
  machineTypes: [{name: local, cpu: "1", gpu: "0", memory: 1Gi}]
  regions: [{name: local}]
  kubernetes:
    versions:
    - version: v1.31
---
`+fmt.Sprintf(namespacedProfileOf, "child-of-broken", "team-b", "broken")+`  kubernetes:
    versions:
    - version: 1.99.0
---
`+fmt.Sprintf(namespacedProfileOf, "bad-override", "team-c", "aws")+`  kubernetes:
    versions:
    - version: 1.31.0
      classification: deprecated
    - version: 1.99.0
`)
	g.Expect(problems).To(BeEmpty())

	report, err := Validate(objects, nil, time.Time{})
	g.Expect(err).NotTo(HaveOccurred())
	// The merge's own messages belong to merge.Namespaced; here only their
	// location is checked.
	g.Expect(report.Problems.Lines()).To(HaveExactElements(
		`set.yaml: CloudProfile/aws: metadata.name: Duplicate value: "aws": CloudProfile/aws is defined twice, first in set.yaml`,
		`set.yaml: NamespacedCloudProfile/team-a/team-a: spec.parent.name: Not found: "gcp": no CloudProfile of that name among the input profiles`,
		`set.yaml: NamespacedCloudProfile/no-namespace: metadata.namespace: Required value: a NamespacedCloudProfile needs a namespace`,
		`set.yaml: CloudProfile/garden/broken: metadata.namespace: Forbidden: a CloudProfile is cluster-scoped and has no namespace (remove "garden")`,
		`set.yaml: CloudProfile/garden/broken: spec.kubernetes.versions[0] (v1.31).version: Invalid value: "v1.31": a Kubernetes version must be MAJOR.MINOR.PATCH, digits only (regex ^[0-9]+\.[0-9]+\.[0-9]+$)`,
		`set.yaml: NamespacedCloudProfile/team-b/child-of-broken: spec.parent.name: Invalid value: "broken": the parent CloudProfile is invalid (see its problems), so this profile cannot be merged`,
		HavePrefix(`set.yaml: NamespacedCloudProfile/team-c/bad-override: spec.kubernetes.versions[0] (1.31.0).classification: Forbidden: `),
		HavePrefix(`set.yaml: NamespacedCloudProfile/team-c/bad-override: spec.kubernetes.versions[1] (1.99.0).version: Not found: "1.99.0"`),
	))
}

func TestValidateLooksUpParentsOutsideTheSet(t *testing.T) {
	g := NewWithT(t)
	objects, problems := decodeString(t, "ncp.yaml", fmt.Sprintf(namespacedProfileOf, "team-a", "team-a", "in-cluster")+"---\n"+
		fmt.Sprintf(namespacedProfileOf, "team-b", "team-b", "nowhere"))
	g.Expect(problems).To(BeEmpty())
	var asked []string
	lookup := func(name string) (*v1alpha1.CloudProfileSpec, bool, error) {
		asked = append(asked, name)
		if name == "in-cluster" {
			return profile(), true, nil
		}
		return nil, false, nil
	}

	report, err := Validate(objects, lookup, time.Time{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(asked).To(Equal([]string{"in-cluster", "nowhere"}))
	g.Expect(report.Problems.Lines()).To(Equal([]string{
		`ncp.yaml: NamespacedCloudProfile/team-b/team-b: spec.parent.name: Not found: "nowhere": no CloudProfile of that name among the input profiles or in the cluster`,
	}))

	_, err = Validate(objects, func(string) (*v1alpha1.CloudProfileSpec, bool, error) {
		return nil, false, errors.New("connection refused")
	}, time.Time{})
	g.Expect(err).To(MatchError(`ncp.yaml: NamespacedCloudProfile/team-a/team-a: looking up parent CloudProfile "in-cluster": connection refused`))
}

func TestApplyDefaultNamespaceFillsOnlyMissingNamespaces(t *testing.T) {
	g := NewWithT(t)
	objects, _ := decodeString(t, "ncp.yaml", fmt.Sprintf(minimalCloudProfile, "aws")+"---\n"+
		fmt.Sprintf(namespacedProfileOf, "a", "", "aws")+"---\n"+
		fmt.Sprintf(namespacedProfileOf, "b", "team-b", "aws"))
	ApplyDefaultNamespace(objects, "profiles")
	g.Expect(objects[0].CloudProfile.Namespace).To(BeEmpty(), "a CloudProfile is cluster-scoped")
	g.Expect(objects[1].NamespacedCloudProfile.Namespace).To(Equal("profiles"))
	g.Expect(objects[2].NamespacedCloudProfile.Namespace).To(Equal("team-b"))
	report, err := Validate(objects, nil, time.Time{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Problems).To(BeEmpty())
}

func TestValidateReportsWarningsOfProfilesAndOnlyNewOnesOfMerges(t *testing.T) {
	g := NewWithT(t)
	objects, _ := decodeString(t, "warn.yaml", `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  machineImages: [{name: local, versions: [{version: 1.0.0}]}]
  machineTypes: [{name: local, cpu: "1", gpu: "0", memory: 1Gi}]
  regions: [{name: local}]
  kubernetes:
    versions:
    - version: 1.31.0
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "2025-03-01T00:00:00Z"
    - version: 1.31.1
      lifecycle:
      - classification: supported
        startTime: "2025-02-01T00:00:00Z"
      - classification: deprecated
        startTime: "2026-01-01T00:00:00Z"
    - version: 1.32.0
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "2025-03-01T00:00:00Z"
    - version: 1.32.1
      lifecycle:
      - classification: supported
        startTime: "2025-04-01T00:00:00Z"
      - classification: deprecated
        startTime: "2026-01-01T00:00:00Z"
---
`+fmt.Sprintf(namespacedProfileOf, "team-a", "team-a", "aws")+`  kubernetes:
    versions:
    - version: 1.32.0
      lifecycle:
      - classification: deprecated
        startTime: "2025-05-01T00:00:00Z"
`)
	report, err := Validate(objects, nil, time.Time{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Problems).To(BeEmpty())
	g.Expect(report.Warnings.Lines()).To(Equal([]string{
		`warn.yaml: CloudProfile/aws: spec.kubernetes.versions[1] (1.31.1): supported window [2025-02-01T00:00:00Z, 2026-01-01T00:00:00Z) of 1.31.1 overlaps supported window [always, 2025-03-01T00:00:00Z) of 1.31.0 (versions[0]) in the same minor; only one version per minor should be supported at a time`,
		`warn.yaml: NamespacedCloudProfile/team-a/team-a: status.cloudProfileSpec.kubernetes.versions[3] (1.32.1): supported window [2025-04-01T00:00:00Z, 2026-01-01T00:00:00Z) of 1.32.1 overlaps supported window [always, 2025-05-01T00:00:00Z) of 1.32.0 (versions[2]) in the same minor; only one version per minor should be supported at a time`,
	}))
}

// TestEvaluateGEP32NamespacedExample evaluates GEP-32's compatibility
// example: the merged lifecycle of 1.18.0 is the one the GEP shows, and the
// status is lifecycle.Status of that merged spec.
func TestEvaluateGEP32NamespacedExample(t *testing.T) {
	g := NewWithT(t)
	parent, ncp := readMergeExample(t, filepath.Join(mergeExamples, "gep-32-compatibility"))
	objects := []Object{{File: "parent.yaml", CloudProfile: &parent}, {File: "namespaced.yaml", NamespacedCloudProfile: &ncp}}
	at := time.Date(2024, 12, 3, 0, 0, 0, 0, time.UTC)
	report, err := Validate(objects, nil, at)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Problems).To(BeEmpty())

	evaluated := report.Evaluate()
	g.Expect(evaluated).To(HaveLen(len(objects)))
	g.Expect(parent.Status.Kubernetes).To(BeNil(), "the inputs are not modified")

	status := evaluated[1].NamespacedCloudProfile.Status
	var merged []string
	for _, s := range status.CloudProfileSpec.Kubernetes.Versions[2].Lifecycle {
		merged = append(merged, string(s.Classification)+"@"+s.StartTime.UTC().Format(time.RFC3339))
	}
	g.Expect(merged).To(Equal([]string{"supported@2022-01-01T00:00:00Z", "deprecated@2024-06-01T00:00:00Z", "expired@2024-06-01T00:00:00Z"}))
	var classifications []string
	for _, v := range status.Kubernetes.Versions {
		classifications = append(classifications, v.Version+"="+string(v.Classification))
	}
	g.Expect(classifications).To(Equal([]string{"1.27.0=supported", "1.28.0=preview", "1.18.0=expired", "2.0.0=unavailable"}))
	g.Expect(evaluated[1].EffectiveSpec()).To(Equal(status.CloudProfileSpec))
}

func TestEvaluateMergesWithTheParentAsTheAPIServerStoresIt(t *testing.T) {
	g := NewWithT(t)
	// minimalCloudProfile's machine image has no updateStrategy.
	objects, _ := decodeString(t, "images.yaml", fmt.Sprintf(minimalCloudProfile, "aws")+"---\n"+
		fmt.Sprintf(namespacedProfileOf, "team-a", "team-a", "aws"))
	report, err := Validate(objects, nil, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Problems).To(BeEmpty())
	evaluated := report.Evaluate()
	g.Expect(evaluated).To(HaveLen(len(objects)))
	g.Expect(evaluated[0].CloudProfile.Spec.MachineImages[0].UpdateStrategy).To(BeNil(), "the printed spec stays as written")
	g.Expect(*evaluated[1].NamespacedCloudProfile.Status.CloudProfileSpec.MachineImages[0].UpdateStrategy).To(Equal(v1alpha1.UpdateStrategyMajor))
}

// TestValidateKeepsTheMergedSpecsForEvaluate checks that Validate
// hands out the merge it did, so that Evaluate needs no second one, and
// that a namespaced profile it could not merge is left out of the evaluation.
func TestValidateKeepsTheMergedSpecsForEvaluate(t *testing.T) {
	g := NewWithT(t)
	objects, problems := decodeString(t, "set.yaml", fmt.Sprintf(minimalCloudProfile, "aws")+"---\n"+
		fmt.Sprintf(namespacedProfileOf, "good", "team-a", "aws")+`  machineImages:
  - name: ubuntu
    updateStrategy: major
    versions:
    - version: "24.4"
      cri: [{name: containerd}]
      architectures: [amd64]
---
`+fmt.Sprintf(namespacedProfileOf, "bad", "team-b", "aws")+`  kubernetes:
    versions:
    - version: 1.99.0
`)
	g.Expect(problems).To(BeEmpty())
	parent, good, bad := objects[0].CloudProfile, objects[1].NamespacedCloudProfile, objects[2].NamespacedCloudProfile

	report, err := Validate(objects, nil, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Problems.Lines()).To(HaveExactElements(HavePrefix(`set.yaml: NamespacedCloudProfile/team-b/bad: spec.kubernetes.versions[0] (1.99.0).version: Not found: "1.99.0"`)))

	want, errs := merge.Namespaced(WithServerDefaults(&parent.Spec), &good.Spec)
	g.Expect(errs).To(BeEmpty())
	g.Expect(report.MergedSpec(good)).To(Equal(want))
	g.Expect(report.MergedSpec(bad)).To(BeNil(), "a profile that does not merge has no merged spec")
	g.Expect(report.MergedSpec(good.DeepCopy())).To(BeNil(), "merged specs belong to the objects validated, not to their names")

	evaluated := report.Evaluate()
	g.Expect(evaluated).To(HaveLen(2), "the profile that does not merge is left out")
	g.Expect(evaluated[1].NamespacedCloudProfile.Name).To(Equal("good"))
	g.Expect(evaluated[1].EffectiveSpec()).To(Equal(want))
	g.Expect(evaluated[1].EffectiveSpec()).NotTo(BeIdenticalTo(report.MergedSpec(good)), "the evaluated objects are copies")
	g.Expect(good.Status.CloudProfileSpec).To(BeNil(), "the inputs are not modified")
}

func TestValidateCountsOnlyVersionsSupportedFromNowOn(t *testing.T) {
	g := NewWithT(t)
	parent := profile()
	parent.Kubernetes.Versions = withNewest(
		deprecatedAPIVersion("1.29.1", supported, "2025-01-01T00:00:00Z"),
		deprecatedAPIVersion("1.29.0", supported, "2024-06-01T00:00:00Z"))
	cp := &v1alpha1.CloudProfile{Spec: *parent}
	cp.Name = "aws"
	ncp := &v1alpha1.NamespacedCloudProfile{Spec: *namespaced()}
	ncp.Name, ncp.Namespace = "team-a", "team-a"
	ncp.Spec.Parent.Name = "aws"
	objects := []Object{{File: "aws.yaml", CloudProfile: cp}, {File: "team-a.yaml", NamespacedCloudProfile: ncp}}

	before, err := Validate(objects, nil, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(before.Problems.Lines()).To(ContainElement(ContainSubstring("spec.kubernetes.versions[0] (1.29.1).classification: Forbidden: only one supported version per minor")))

	after, err := Validate(objects, nil, time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.Problems).To(BeEmpty(), "both versions expired before now, so neither is supported")
	g.Expect(after.MergedSpec(ncp)).NotTo(BeNil())
}

// TestLoadDecodesValidatesAndEvaluatesAtOneTime checks the one load path:
// decoding problems and validation problems come together, and a set is
// evaluated at the time it was validated at, never another.
func TestLoadDecodesValidatesAndEvaluatesAtOneTime(t *testing.T) {
	g := NewWithT(t)
	docs := []Document{{File: "profiles.yaml", Data: []byte(`apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  kubernetes:
    versions:
    - version: 1.30.0
      lifecycle:
      - classification: preview
      - classification: supported
        startTime: "2025-03-01T00:00:00Z"
  machineImages:
  - name: ubuntu
    versions:
    - version: 22.04.0
  machineTypes:
  - name: m5.large
    cpu: "2"
    gpu: "0"
    memory: 8Gi
  regions:
  - name: eu-west-1
`)}}
	for _, tt := range []struct {
		at   time.Time
		want v1alpha1.VersionClassification
	}{
		{at: time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC), want: v1alpha1.ClassificationPreview},
		{at: time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC), want: v1alpha1.ClassificationSupported},
	} {
		set, err := Load(docs, nil, tt.at)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(set.Problems).To(BeEmpty())
		evaluated := set.Evaluate()
		g.Expect(evaluated).To(HaveLen(1))
		g.Expect(evaluated[0].CloudProfile.Status.Kubernetes.Versions).To(HaveLen(1))
		g.Expect(evaluated[0].CloudProfile.Status.Kubernetes.Versions[0].Classification).To(Equal(tt.want), "evaluated at %s", tt.at)
	}

	broken := append([]Document{{File: "broken.yaml", Data: []byte("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: gcp\nspec:\n  type: gcp\n  unknownField: true\n")}}, docs...)
	set, err := Load(broken, nil, time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.Problems.Lines()).To(ContainElement(HavePrefix("broken.yaml")), "decoding problems are the set's problems")
	g.Expect(set.Objects).To(HaveLen(1), "what decoded is validated")
}

// TestLoadCheckedReportsEveryKindOfProblemInOneRound: typing problems, the
// decoding's and the validation's come together, a keyed entry written twice
// hides nothing, and a refused CloudProfile makes its NamespacedCloudProfile
// name it as an invalid parent, not as a missing one.
func TestLoadCheckedReportsEveryKindOfProblemInOneRound(t *testing.T) {
	withoutType := strings.Replace(fmt.Sprintf(minimalCloudProfile, "aws"), "  type: local\n", "", 1)
	tests := []struct {
		name, content string
		want          []string
	}{
		{
			name: "a version written twice and a missing spec.type are reported together, the duplicate once",
			content: withoutType + "    - version: 1.31.0\n---\n" +
				fmt.Sprintf(namespacedProfileOf, "team-a", "team-a", "aws"),
			want: []string{
				`set.yaml: CloudProfile/aws: spec.kubernetes.versions[1] (1.31.0): Duplicate value: {"version":"1.31.0"}: each key may appear once in this list`,
				`set.yaml: CloudProfile/aws: spec.type: Required value`,
				`set.yaml: NamespacedCloudProfile/team-a/team-a: spec.parent.name: Invalid value: "aws": the parent CloudProfile is invalid (see its problems), so this profile cannot be merged`,
			},
		},
		{
			name: "a typing problem, an unknown field and a rule of another object are reported together",
			content: strings.Replace(fmt.Sprintf(minimalCloudProfile, "aws"), "  name: aws\n", "  name: aws\n  labels: {usable: yes}\n", 1) + "---\n" +
				strings.Replace(fmt.Sprintf(minimalCloudProfile, "gcp"), "  type: local\n", "  type: local\n  machineTypez: []\n", 1) + "---\n" +
				fmt.Sprintf(namespacedProfileOf, "team-a", "team-a", "gcp") + "  kubernetes:\n    versions:\n    - version: 1.99.0\n",
			want: []string{
				`set.yaml: CloudProfile/aws: metadata.labels.usable: Invalid value: yes as written: YAML 1.2, which the sync reads, takes it as the string "yes", YAML 1.1 as a boolean; quote it ("yes") or write true or false`,
				`set.yaml: CloudProfile/gcp: spec.machineTypez: unknown field: the API has no such field (check spelling and indentation)`,
				`set.yaml: NamespacedCloudProfile/team-a/team-a: spec.parent.name: Invalid value: "gcp": the parent CloudProfile is invalid (see its problems), so this profile cannot be merged`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			docs, err := SplitDocuments("set.yaml", strings.NewReader(tt.content))
			g.Expect(err).NotTo(HaveOccurred())
			set, err := LoadChecked(docs, CheckYAMLTyping("set.yaml", []byte(tt.content)), nil, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(set.Problems.Lines()).To(Equal(tt.want))
		})
	}
}

// TestValidateRefusesAnUnendingSupportedOverlapOfAMergedSpec checks that
// Gardener's rule for unending supported stages applies to a namespaced
// profile's merged spec, as Gardener's admission validates
// status.cloudProfileSpec: the parent's overlap is over at now, the
// override's later deprecation makes it current again.
func TestValidateRefusesAnUnendingSupportedOverlapOfAMergedSpec(t *testing.T) {
	g := NewWithT(t)
	objects, problems := decodeString(t, "overlap.yaml", `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  machineImages: [{name: local, versions: [{version: 1.0.0}]}]
  machineTypes: [{name: local, cpu: "1", gpu: "0", memory: 1Gi}]
  regions: [{name: local}]
  kubernetes:
    versions:
    - version: 1.33.0
    - version: 1.32.0
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "2025-05-01T00:00:00Z"
    - version: 1.32.1
      lifecycle:
      - classification: supported
        startTime: "2025-04-01T00:00:00Z"
---
`+fmt.Sprintf(namespacedProfileOf, "team-a", "team-a", "aws")+`  kubernetes:
    versions:
    - version: 1.32.0
      lifecycle:
      - classification: deprecated
        startTime: "2026-01-01T00:00:00Z"
`)
	g.Expect(problems).To(BeEmpty())
	report, err := Validate(objects, nil, time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Problems.Lines()).To(ConsistOf(
		ContainSubstring(`NamespacedCloudProfile/team-a/team-a: status.cloudProfileSpec.kubernetes.versions[1] (1.32.0): Forbidden: unable to add version "1.32.0" with classification "supported". "supported" lifecycle stages must not overlap per minor version`),
		ContainSubstring(`NamespacedCloudProfile/team-a/team-a: status.cloudProfileSpec.kubernetes.versions[2] (1.32.1): Forbidden: unable to add version "1.32.1" with classification "supported". "supported" lifecycle stages must not overlap per minor version`),
	))
}
