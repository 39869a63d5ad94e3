package profile

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// cloudProfileWith is a valid CloudProfile "p" whose spec, after type and
// one Kubernetes version, continues with extra.
func cloudProfileWith(extra string) string {
	return "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\nspec:\n  type: aws\n  kubernetes:\n    versions:\n    - version: 1.31.0\n" + extra
}

// cloudProfileWithVersions is a CloudProfile "p" with the given Kubernetes
// versions, each one YAML flow mapping.
func cloudProfileWithVersions(versions ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\nspec:\n  type: aws\n  kubernetes:\n    versions:\n")
	for _, v := range versions {
		b.WriteString("    - " + v + "\n")
	}
	return b.String()
}

// cloudProfileWithMetadata is a valid CloudProfile with the given metadata lines.
func cloudProfileWithMetadata(metadata string) string {
	return "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n" + metadata + "spec:\n  type: aws\n  kubernetes:\n    versions:\n    - version: 1.31.0\n"
}

// namespacedWithMetadata is a valid NamespacedCloudProfile with the given metadata lines.
func namespacedWithMetadata(metadata string) string {
	return "apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n" + metadata + "spec:\n  parent:\n    kind: CloudProfile\n    name: p\n"
}

func stages(count int) string {
	var b strings.Builder
	b.WriteString("[{classification: preview}")
	for i := 1; i < count; i++ {
		fmt.Fprintf(&b, ", {classification: supported, startTime: \"2025-01-01T00:00:%02dZ\"}", i%60)
	}
	b.WriteString("]")
	return b.String()
}

// expectDecoded decodes stream as p.yaml and expects exactly the problem
// lines want, or, when want is empty, one object and no problem.
func expectDecoded(t *testing.T, stream string, want []string) {
	t.Helper()
	g := NewWithT(t)
	objects, problems := decodeString(t, "p.yaml", stream)
	if len(want) == 0 {
		g.Expect(problems).To(BeEmpty())
		g.Expect(objects).To(HaveLen(1))
		return
	}
	g.Expect(objects).To(BeEmpty())
	g.Expect(problems.Lines()).To(Equal(want))
}

func TestDecodeDocumentsRefusesWhatTheCRDSchemaRefusesWithTheAPIServersMessages(t *testing.T) {
	manyVersions := make([]string, 1001)
	for i := range manyVersions {
		manyVersions[i] = fmt.Sprintf("{version: 1.%d.0}", i)
	}
	tests := []struct {
		name   string
		stream string
		want   []string
	}{
		{
			name:   "a lifecycle of five stages is one too many",
			stream: cloudProfileWithVersions("{version: 1.30.0, lifecycle: "+stages(5)+"}", "{version: 1.31.0}"),
			// There are four classifications, and stages are keyed by theirs:
			// a fifth stage always repeats one, which the API server reports too.
			want: []string{
				`p.yaml: CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).lifecycle: Too many: 5: must have at most 4 items`,
				`p.yaml: CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).lifecycle[2]: Duplicate value: {"classification":"supported"}`,
			},
		},
		{
			name:   "more than 1,000 Kubernetes versions are refused",
			stream: cloudProfileWithVersions(manyVersions...),
			want:   []string{`p.yaml: CloudProfile/p: spec.kubernetes.versions: Too many: 1001: must have at most 1000 items`},
		},
		{
			name:   "a start time that is no date is named with its indices",
			stream: cloudProfileWithVersions(`{version: 1.30.0, lifecycle: [{classification: preview}, {classification: supported, startTime: "2026-13-01"}]}`, "{version: 1.31.0}"),
			want:   []string{`p.yaml: CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).lifecycle[1].startTime: Invalid value: "2026-13-01": spec.kubernetes.versions[0].lifecycle[1].startTime in body must be of type date-time: "2026-13-01"`},
		},
		{
			name:   "a date-time the API server stores but clients cannot read is refused",
			stream: cloudProfileWithVersions(`{version: 1.30.0, expirationDate: "2025-01-01t00:00:00z"}`, "{version: 1.31.0}"),
			want:   []string{`p.yaml: CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).expirationDate: Invalid value: "2025-01-01t00:00:00z": must be an RFC 3339 date-time as clients read it, for example 2025-06-01T00:00:00Z`},
		},
		{
			name:   "an update strategy outside the enum",
			stream: cloudProfileWith("  machineImages:\n  - name: gl\n    updateStrategy: always\n    versions: [{version: 1.0.0}]\n"),
			want:   []string{`p.yaml: CloudProfile/p: spec.machineImages[0] (gl).updateStrategy: Unsupported value: "always": supported values: "patch", "minor", "major"`},
		},
		{
			name:   "a provider type longer than 63 bytes",
			stream: strings.Replace(cloudProfileWith(""), "type: aws", "type: "+strings.Repeat("a", 64), 1),
			want:   []string{`p.yaml: CloudProfile/p: spec.type: Too long: may not be more than 63 bytes`},
		},
		{
			name:   "a machine type given twice breaks the list's unique key",
			stream: cloudProfileWith("  machineTypes:\n  - {name: m5, cpu: 2, gpu: 0, memory: 8Gi}\n  - {name: m5, cpu: 4, gpu: 0, memory: 16Gi}\n"),
			want:   []string{`p.yaml: CloudProfile/p: spec.machineTypes[1] (m5): Duplicate value: {"name":"m5"}`},
		},
		{
			name:   "a quantity that is none",
			stream: cloudProfileWith("  machineTypes:\n  - {name: m5, cpu: 4.5.5, gpu: 0, memory: 8Gi}\n"),
			want:   []string{`p.yaml: CloudProfile/p: spec.machineTypes[0] (m5).cpu: Invalid value: "4.5.5": spec.machineTypes[0].cpu in body should match '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'`},
		},
		{
			name:   "a required field left out",
			stream: "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\nspec:\n  type: aws\n",
			want:   []string{`p.yaml: CloudProfile/p: spec.kubernetes: Required value`},
		},
		{
			name:   "a Gardener profile is checked against the same schema",
			stream: strings.Replace(cloudProfileWith("  caBundle: 5\n"), "core.profilesync.io/v1alpha1", GardenerGroupVersion, 1),
			want:   []string{`p.yaml: CloudProfile/p: spec.caBundle: Invalid value: "integer": spec.caBundle in body must be of type string: "integer"`},
		},
		{
			name: "every problem of every document is reported at once, in field order",
			stream: cloudProfileWith("  machineImages:\n  - name: gl\n    updateStrategy: always\n    versions: [{version: 1.0.0, architectures: [s390x]}]\n  regionz: []\n") +
				"---\n" + namespacedWithMetadata("  name: team-a\n  namespace: team-a\n") + "  machineTypes:\n  - {name: m5, cpu: many, gpu: 0, memory: 8Gi}\n",
			want: []string{
				`p.yaml: CloudProfile/p: spec.machineImages[0] (gl).updateStrategy: Unsupported value: "always": supported values: "patch", "minor", "major"`,
				`p.yaml: CloudProfile/p: spec.machineImages[0] (gl).versions[0] (1.0.0).architectures[0]: Unsupported value: "s390x": supported values: "amd64", "arm64"`,
				`p.yaml: CloudProfile/p: spec.regionz: unknown field: the API has no such field (check spelling and indentation)`,
				`p.yaml: NamespacedCloudProfile/team-a/team-a: spec.machineTypes[0] (m5).cpu: Invalid value: "many": spec.machineTypes[0].cpu in body should match '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'`,
			},
		},
		{
			name:   "a status the schema would refuse is not refused: the API server drops it",
			stream: cloudProfileWith("") + "status:\n  conditions: [{type: Ready}]\n",
		},
		{
			name:   "unknown fields are all named even next to a value of the wrong type",
			stream: cloudProfileWith("  caBundle: [pem]\n  regionz: []\n  machineTypez: []\n"),
			want: []string{
				`p.yaml: CloudProfile/p: spec.caBundle: Invalid value: "array": spec.caBundle in body must be of type string: "array"`,
				`p.yaml: CloudProfile/p: spec.machineTypez: unknown field: the API has no such field (check spelling and indentation)`,
				`p.yaml: CloudProfile/p: spec.regionz: unknown field: the API has no such field (check spelling and indentation)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectDecoded(t, tt.stream, tt.want)
		})
	}
}

func TestDecodeDocumentsReportsATenThousandStageLifecycleOnce(t *testing.T) {
	g := NewWithT(t)
	objects, problems := decodeString(t, "p.yaml", cloudProfileWithVersions("{version: 1.30.0, lifecycle: "+stages(10000)+"}", "{version: 1.31.0}"))
	g.Expect(objects).To(BeEmpty(), "an object the schema refuses never reaches the lifecycle rules")
	g.Expect(problems.Lines()).To(Equal([]string{
		`p.yaml: CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).lifecycle: Too many: 10000: must have at most 4 items`,
		`p.yaml: CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).lifecycle[2]: Duplicate value: {"classification":"supported"}`,
	}), "a classification repeated 9,999 times is one duplicate")
}

func TestDecodeDocumentsChecksMetadataAsTheAPIServerDoes(t *testing.T) {
	const dnsSubdomain = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	const dnsLabel = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	const reserved = `Forbidden: the profilesync.io/ domain is reserved: the sync sets profilesync.io/name and profilesync.io/namespace itself to mark the objects it owns`
	annotation := strings.Repeat("x", 140*1024)
	tests := []struct {
		name   string
		stream string
		want   []string
	}{
		{
			name:   "a name that is no DNS subdomain",
			stream: cloudProfileWithMetadata("  name: Bad_Name!\n"),
			want:   []string{`p.yaml: CloudProfile/Bad_Name!: metadata.name: Invalid value: "Bad_Name!": ` + dnsSubdomain},
		},
		{
			name:   "a namespace that climbs out of the tree",
			stream: namespacedWithMetadata("  name: team-a\n  namespace: ../../etc\n"),
			want:   []string{`p.yaml: NamespacedCloudProfile/../../etc/team-a: metadata.namespace: Invalid value: "../../etc": ` + dnsLabel},
		},
		{
			name:   "a namespace with spaces and capitals",
			stream: namespacedWithMetadata("  name: team-a\n  namespace: Not A Namespace\n"),
			want:   []string{`p.yaml: NamespacedCloudProfile/Not A Namespace/team-a: metadata.namespace: Invalid value: "Not A Namespace": ` + dnsLabel},
		},
		{
			name:   "a label key that is no qualified name",
			stream: cloudProfileWithMetadata("  name: p\n  labels:\n    bad key: x\n"),
			want:   []string{`p.yaml: CloudProfile/p: metadata.labels: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		},
		{
			name:   "the sync's owner label may not come from Git",
			stream: cloudProfileWithMetadata("  name: p\n  labels:\n    profilesync.io/name: prod\n    profilesync.io/namespace: garden\n"),
			want: []string{
				`p.yaml: CloudProfile/p: metadata.labels[profilesync.io/name]: ` + reserved,
				`p.yaml: CloudProfile/p: metadata.labels[profilesync.io/namespace]: ` + reserved,
			},
		},
		{
			name:   "no label of the reserved domain or its subdomains",
			stream: cloudProfileWithMetadata("  name: p\n  labels:\n    team.profilesync.io/owner: x\n    example.com/profilesync.io: ok\n"),
			want:   []string{`p.yaml: CloudProfile/p: metadata.labels[team.profilesync.io/owner]: ` + reserved},
		},
		{
			name:   "the sync's digest annotation may not come from Git",
			stream: cloudProfileWithMetadata("  name: p\n  annotations:\n    profilesync.io/applied-digest: sha256:0\n"),
			want: []string{`p.yaml: CloudProfile/p: metadata.annotations[profilesync.io/applied-digest]: ` +
				`Forbidden: the profilesync.io/ domain is reserved: the sync sets profilesync.io/applied-digest itself to record what it applied`},
		},
		{
			name:   "a hold of break glass may not come from Git: it is set by hand on the live object",
			stream: cloudProfileWithMetadata("  name: p\n  annotations:\n    profilesync.io/hold-until: \"2025-06-02T00:00:00Z\"\n    profilesync.io/hold-reason: INC-1\n"),
			want: []string{
				`p.yaml: CloudProfile/p: metadata.annotations[profilesync.io/hold-reason]: Forbidden: the profilesync.io/ domain is reserved: the sync sets profilesync.io/applied-digest itself to record what it applied`,
				`p.yaml: CloudProfile/p: metadata.annotations[profilesync.io/hold-until]: Forbidden: the profilesync.io/ domain is reserved: the sync sets profilesync.io/applied-digest itself to record what it applied`,
			},
		},
		{
			name:   "annotations over 256 KiB together",
			stream: cloudProfileWithMetadata(fmt.Sprintf("  name: p\n  annotations:\n    a: %s\n    b: %s\n", annotation, annotation)),
			want:   []string{`p.yaml: CloudProfile/p: metadata.annotations: Too long: may not be more than 262144 bytes`},
		},
		{
			name:   "a label value of the wrong type",
			stream: cloudProfileWithMetadata("  name: p\n  labels:\n    replicas: 3\n"),
			want:   []string{`p.yaml: CloudProfile/p: metadata.labels: Invalid value: "number": must be of type string`},
		},
		{
			name:   "an unknown metadata field next to a value of the wrong type",
			stream: strings.Replace(cloudProfileWithMetadata("  name: p\n  lables: {}\n"), "type: aws", "type: [aws]", 1),
			want: []string{
				`p.yaml: CloudProfile/p: spec.type: Invalid value: "array": spec.type in body must be of type string: "array"`,
				`p.yaml: CloudProfile/p: metadata.lables: unknown field: the API has no such field (check spelling and indentation)`,
			},
		},
		{
			name:   "a namespaced profile without namespace is left to Validate: the sync fills one in",
			stream: namespacedWithMetadata("  name: team-a\n"),
		},
		{
			name:   "the namespace of a CloudProfile is left to Validate, which refuses any",
			stream: cloudProfileWithMetadata("  name: p\n  namespace: Not A Namespace\n"),
		},
		{
			name:   "a negative generation is not refused: the API server sets generation itself",
			stream: cloudProfileWithMetadata("  name: p\n  generation: -1\n"),
		},
		{
			name:   "a label of another domain that ends in profilesync.io is not reserved",
			stream: cloudProfileWithMetadata("  name: p\n  labels:\n    notprofilesync.io/team: a\n"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectDecoded(t, tt.stream, tt.want)
		})
	}
}

func TestDecodeDocumentsNeverShowsGoTypesOrTimeLayouts(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []string
	}{
		{
			name:   "metadata that is a list",
			stream: "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata: []\nspec:\n  type: aws\n  kubernetes:\n    versions: [{version: 1.31.0}]\n",
			want:   []string{`p.yaml: CloudProfile/: metadata: Invalid value: "array": metadata in body must be of type object: "array"`},
		},
		{
			name:   "a name that is a number",
			stream: cloudProfileWithMetadata("  name: 5\n"),
			want:   []string{`p.yaml: CloudProfile/: metadata.name: Invalid value: "number": must be of type string`},
		},
		{
			name:   "a creation timestamp that is no time",
			stream: cloudProfileWithMetadata("  name: p\n  creationTimestamp: yesterday\n"),
			want:   []string{`p.yaml: CloudProfile/p: metadata.creationTimestamp: Invalid value: "yesterday": must be an RFC 3339 date-time, for example 2025-06-01T00:00:00Z`},
		},
		{
			name:   "a status value of the wrong type",
			stream: cloudProfileWith("") + "status:\n  observedGeneration: many\n",
			want:   []string{`p.yaml: CloudProfile/p: status.observedGeneration: Invalid value: "string": status.observedGeneration in body must be of type integer: "string"`},
		},
		{
			name:   "a status time that is no time",
			stream: cloudProfileWith("") + "status:\n  kubernetes:\n    versions: [{version: 1.31.0, classification: supported, nextTransitionTime: soon}]\n",
			want:   []string{`p.yaml: CloudProfile/p: status.kubernetes.versions[0] (1.31.0).nextTransitionTime: Invalid value: "soon": status.kubernetes.versions[0].nextTransitionTime in body must be of type date-time: "soon"`},
		},
		{
			name:   "a value of the wrong type in the merged spec of a namespaced profile, which the schema leaves open",
			stream: namespacedWithMetadata("  name: team-a\n  namespace: team-a\n") + "status:\n  cloudProfileSpec:\n    type: [aws]\n",
			want:   []string{`p.yaml: NamespacedCloudProfile/team-a/team-a: status.cloudProfileSpec.type: Invalid value: "array": must be of type string`},
		},
		{
			name:   "a machine creation timeout that is no Go duration",
			stream: cloudProfileWith("  machineTypes:\n  - {name: m5.large, cpu: 2, gpu: 0, memory: 8Gi, machineControllerManager: {machineCreationTimeout: 20 minutes}}\n"),
			want: []string{`p.yaml: CloudProfile/p: spec.machineTypes[0] (m5.large).machineControllerManager.machineCreationTimeout: Invalid value: "20 minutes": ` +
				`spec.machineTypes[0].machineControllerManager.machineCreationTimeout in body should match '^[-+]?((([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(ns|us|µs|μs|ms|s|m|h))+$|^[-+]?0$'`},
		},
		{
			name:   "a kind that is a number",
			stream: "apiVersion: core.profilesync.io/v1alpha1\nkind: 5\nmetadata:\n  name: p\n",
			want:   []string{`p.yaml: document 1: kind must be a string, CloudProfile or NamespacedCloudProfile, not an integer`},
		},
		{
			name:   "a document that is a list",
			stream: "- apiVersion: core.profilesync.io/v1alpha1\n",
			want:   []string{`p.yaml: document 1: not a Kubernetes object: expected a mapping with apiVersion, kind and metadata, found an array`},
		},
		{
			name:   "an apiVersion that is a number",
			stream: strings.Replace(cloudProfileWith(""), "apiVersion: core.profilesync.io/v1alpha1", "apiVersion: 1", 1),
			want:   []string{`p.yaml: CloudProfile/p: apiVersion: Invalid value: "integer": apiVersion in body must be of type string: "integer"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objects, problems := decodeString(t, "p.yaml", tt.stream)
			g.Expect(objects).To(BeEmpty())
			lines := problems.Lines()
			g.Expect(lines).To(Equal(tt.want))
			for _, line := range lines {
				g.Expect(line).NotTo(Or(ContainSubstring("Go "), ContainSubstring("v1alpha1."), ContainSubstring("int64"),
					ContainSubstring("struct"), ContainSubstring("2006-01-02"), ContainSubstring("map[")))
			}
		})
	}
}

func TestSplitAndDecodeDocumentsAcceptEmptyDocuments(t *testing.T) {
	profile := cloudProfileWith("")
	tests := []struct {
		name   string
		stream string
	}{
		{"a leading separator followed by a separator", "---\n---\n" + profile},
		{"a trailing separator followed by a separator", profile + "---\n---\n"},
		{"separators with comments and spaces around the profile", "--- # profiles\n---   \n" + profile + "---\n# nothing more\n---\n"},
		{"a document of only an end marker", "---\n...\n---\n" + profile},
		{"explicit null documents", "---\nnull\n---\n" + profile + "---\n~\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objects, problems := decodeString(t, "p.yaml", tt.stream)
			g.Expect(problems).To(BeEmpty())
			g.Expect(objects).To(HaveLen(1))
			g.Expect(objects[0].Ref()).To(Equal("CloudProfile/p"))
		})
	}
}

func TestSplitDocumentsDropsDocumentsOfOnlySeparators(t *testing.T) {
	g := NewWithT(t)
	docs, err := SplitDocuments("p.yaml", strings.NewReader("---\n---\n"+cloudProfileWith("")+"---\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docs).To(HaveLen(1), "document 1 is the profile, so messages count it as the first")
}

// TestProfileCompilesNoClientControllerRuntimeOrKustomize guards the
// package's promise (doc.go): checking profiles against the CRD schema pulls
// in the API server's validation code, but never a client,
// controller-runtime or, through some import of an import, kustomize, which
// depguard sees only when imported directly.
func TestProfileCompilesNoClientControllerRuntimeOrKustomize(t *testing.T) {
	g := NewWithT(t)
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	for _, dep := range strings.Fields(string(out)) {
		g.Expect(dep).NotTo(Or(HavePrefix("sigs.k8s.io/controller-runtime"), HavePrefix("k8s.io/client-go"), HavePrefix("sigs.k8s.io/kustomize")))
	}
}

// BenchmarkDecodeDocuments decodes a CloudProfile of 600 Kubernetes
// versions, the size of a long-lived landscape, without and with
// four-stage lifecycles, as a person writes it (YAML) and as a build
// renders it (canonical JSON, which skips the YAML parse).
func BenchmarkDecodeDocuments(b *testing.B) {
	for _, bench := range []struct {
		name    string
		version string
	}{
		{"600 versions", `{version: 1.%d.%d}`},
		{"600 versions with lifecycles", `{version: 1.%d.%d, lifecycle: [{classification: preview}, {classification: supported, startTime: "2025-01-01T00:00:00Z"}, {classification: deprecated, startTime: "2025-06-01T00:00:00Z"}, {classification: expired, startTime: "2026-01-01T00:00:00Z"}]}`},
	} {
		versions := make([]string, 600)
		for i := range versions {
			versions[i] = fmt.Sprintf(bench.version, i/10, i%10)
		}
		docs, err := SplitDocuments("p.yaml", strings.NewReader(cloudProfileWithVersions(versions...)))
		if err != nil {
			b.Fatal(err)
		}
		rendered, err := yaml.YAMLToJSONStrict(docs[0].Data)
		if err != nil {
			b.Fatal(err)
		}
		for format, docs := range map[string][]Document{"YAML": docs, "JSON": {{File: "p.yaml", Data: rendered}}} {
			b.Run(bench.name+" as "+format, func(b *testing.B) {
				cpuBefore := processCPU(b)
				for b.Loop() {
					if _, problems := DecodeDocuments(docs); len(problems) > 0 {
						b.Fatal(problems)
					}
				}
				b.ReportMetric((processCPU(b)-cpuBefore).Seconds()/float64(b.N), "CPU-s/op")
			})
		}
	}
}

// processCPU is the CPU time this process has used (user and system, the
// garbage collector's included): on a shared machine, a steadier measure
// of a decode's cost than its wall time.
func processCPU(b *testing.B) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatal(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
