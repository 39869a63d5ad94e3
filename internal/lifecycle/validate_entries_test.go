package lifecycle

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// entriesSpec is validSpec with machine and volume types.
func entriesSpec() *v1alpha1.CloudProfileSpec {
	spec := validSpec()
	spec.MachineTypes = []v1alpha1.MachineType{machineType("m5.large", nil), machineType("n1-standard_2", nil)}
	spec.VolumeTypes = []v1alpha1.VolumeType{{Name: "gp3", Class: "standard"}}
	return spec
}

func quantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// selfSignedPEM is a freshly made self-signed certificate, PEM-encoded.
func selfSignedPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "profilesync-test"},
		NotBefore: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestValidateCABundle(t *testing.T) {
	certificate := selfSignedPEM(t)
	tests := []struct {
		name     string
		caBundle *string
		want     string // substring of the error's detail; empty for none
	}{
		{name: "no bundle is fine", caBundle: nil},
		{name: "a PEM certificate is fine", caBundle: &certificate},
		{name: "two PEM certificates are fine", caBundle: ptr.To(certificate + certificate)},
		{name: "an empty bundle is refused", caBundle: ptr.To(""), want: "no PEM block found"},
		{name: "text that is not PEM is refused", caBundle: ptr.To("my certificate"), want: "no PEM block found"},
		{name: "a PEM block other than a certificate is refused", caBundle: ptr.To("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), want: "the first PEM block is a PRIVATE KEY"},
		{name: "a CERTIFICATE block that does not parse is refused", caBundle: ptr.To("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), want: "not a PEM-encoded certificate: x509:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := ValidateCABundle(tt.caBundle, field.NewPath("spec", "caBundle"))
			if tt.want == "" {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errorsOf(errs)).To(ConsistOf("FieldValueInvalid spec.caBundle"))
			g.Expect(errs[0].Detail).To(ContainSubstring(tt.want))
		})
	}
}

func TestValidateCloudProfileSpecChecksTheCABundle(t *testing.T) {
	g := NewWithT(t)
	spec := entriesSpec()
	spec.CABundle = ptr.To("not a certificate")
	errs, _ := ValidateCloudProfileSpec(spec, field.NewPath("spec"))
	g.Expect(errorsOf(errs)).To(ConsistOf("FieldValueInvalid spec.caBundle"))
}

func TestValidateMachineTypes(t *testing.T) {
	tests := []struct {
		name       string
		change     func(*v1alpha1.CloudProfileSpec)
		wantErrors []string
	}{
		{name: "machine types breaking no rule are valid", change: func(*v1alpha1.CloudProfileSpec) {}},
		{
			name:       "a negative cpu is refused",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.MachineTypes[0].CPU = resource.MustParse("-1") },
			wantErrors: []string{"FieldValueInvalid spec.machineTypes[0] (m5.large).cpu"},
		},
		{
			name:       "a negative gpu is refused",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.MachineTypes[1].GPU = resource.MustParse("-1") },
			wantErrors: []string{"FieldValueInvalid spec.machineTypes[1] (n1-standard_2).gpu"},
		},
		{
			name:       "a negative memory is refused",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.MachineTypes[0].Memory = resource.MustParse("-8Gi") },
			wantErrors: []string{"FieldValueInvalid spec.machineTypes[0] (m5.large).memory"},
		},
		{
			name:   "zero cpu, gpu and memory are fine",
			change: func(s *v1alpha1.CloudProfileSpec) { s.MachineTypes[0].GPU = resource.MustParse("0") },
		},
		{
			name:       "a machine type needs a name",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.MachineTypes[0].Name = "" },
			wantErrors: []string{"FieldValueRequired spec.machineTypes[0].name"},
		},
		{
			name:       "machine type names are unique",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.MachineTypes[1].Name = "m5.large" },
			wantErrors: []string{"FieldValueDuplicate spec.machineTypes[1] (m5.large).name"},
		},
		{
			name:       "a machine type name is a qualified name",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.MachineTypes[0].Name = "m5/large" },
			wantErrors: []string{"FieldValueInvalid spec.machineTypes[0] (m5/large).name"},
		},
		{
			name: "a negative storage size is refused",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes[0].Storage = &v1alpha1.MachineTypeStorage{Class: "standard", Type: "gp3", StorageSize: quantity("-1Gi")}
			},
			wantErrors: []string{"FieldValueInvalid spec.machineTypes[0] (m5.large).storage.size"},
		},
		{
			name: "a negative machine creation timeout is refused",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes[0].MachineControllerManager = &v1alpha1.MachineTypeMachineControllerManager{
					MachineCreationTimeout: &metav1.Duration{Duration: -time.Minute},
				}
			},
			wantErrors: []string{"FieldValueInvalid spec.machineTypes[0] (m5.large).machineControllerManager.machineCreationTimeout"},
		},
		{
			name: "a machine creation timeout is fine",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes[0].MachineControllerManager = &v1alpha1.MachineTypeMachineControllerManager{
					MachineCreationTimeout: &metav1.Duration{Duration: 20 * time.Minute},
				}
			},
		},
		{
			name: "storage needs size or minSize",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes[0].Storage = &v1alpha1.MachineTypeStorage{Class: "standard", Type: "gp3"}
			},
			wantErrors: []string{"FieldValueRequired spec.machineTypes[0] (m5.large).storage"},
		},
		{
			name: "storage may not have both size and minSize",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes[0].Storage = &v1alpha1.MachineTypeStorage{Class: "standard", Type: "gp3", StorageSize: quantity("20Gi"), MinSize: quantity("10Gi")}
			},
			wantErrors: []string{"FieldValueForbidden spec.machineTypes[0] (m5.large).storage.minSize"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := entriesSpec()
			tt.change(spec)
			errs, _ := ValidateCloudProfileSpec(spec, field.NewPath("spec"))
			g.Expect(errorsOf(errs)).To(ConsistOf(tt.wantErrors))
		})
	}
}

func TestValidateVolumeTypes(t *testing.T) {
	tests := []struct {
		name       string
		change     func(*v1alpha1.CloudProfileSpec)
		wantErrors []string
	}{
		{name: "volume types breaking no rule are valid", change: func(*v1alpha1.CloudProfileSpec) {}},
		{
			name:       "an empty class is refused",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.VolumeTypes[0].Class = "" },
			wantErrors: []string{"FieldValueRequired spec.volumeTypes[0] (gp3).class"},
		},
		{
			name:       "a class is a qualified name",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.VolumeTypes[0].Class = "fast ssd" },
			wantErrors: []string{"FieldValueInvalid spec.volumeTypes[0] (gp3).class"},
		},
		{
			name:       "a negative minSize is refused",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.VolumeTypes[0].MinSize = quantity("-1Gi") },
			wantErrors: []string{"FieldValueInvalid spec.volumeTypes[0] (gp3).minSize"},
		},
		{
			name:       "volume type names are unique",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.VolumeTypes = append(s.VolumeTypes, s.VolumeTypes[0]) },
			wantErrors: []string{"FieldValueDuplicate spec.volumeTypes[1] (gp3).name"},
		},
		{
			name:       "a volume type name is a qualified name",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.VolumeTypes[0].Name = "-gp3" },
			wantErrors: []string{"FieldValueInvalid spec.volumeTypes[0] (-gp3).name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := entriesSpec()
			tt.change(spec)
			errs, _ := ValidateCloudProfileSpec(spec, field.NewPath("spec"))
			g.Expect(errorsOf(errs)).To(ConsistOf(tt.wantErrors))
		})
	}
}

func TestValidateQualifiedName(t *testing.T) {
	tests := []struct {
		name      string
		value     string
		wantValid bool
	}{
		{"a lower-case name is fine", "ubuntu", true},
		{"dots, dashes, underscores and capitals inside are fine", "Garden_Linux-1.2", true},
		{"a single character is fine", "a", true},
		{"empty is left to the rule requiring a name", "", true},
		{"a slash is refused", "foo/bar", false},
		{"a leading dash is refused", "-ubuntu", false},
		{"a trailing dot is refused", "ubuntu.", false},
		{"a space is refused", "my image", false},
		{"64 characters are too long", strings.Repeat("a", 64), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateQualifiedName(tt.value, field.NewPath("spec", "machineImages").Index(0).Child("name"))
			NewWithT(t).Expect(errs == nil).To(Equal(tt.wantValid), "%v", errs)
		})
	}
}

func TestValidateCloudProfileSpecRefusesUnqualifiedImageNames(t *testing.T) {
	for _, name := range []string{"foo/bar", "-ubuntu", "my image"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			spec := validSpec()
			spec.MachineImages[1].Name = name
			errs, _ := ValidateCloudProfileSpec(spec, field.NewPath("spec"))
			g.Expect(errorsOf(errs)).To(ConsistOf("FieldValueInvalid spec.machineImages[1] (" + name + ").name"))
		})
	}
}

func TestValidateCapabilityNames(t *testing.T) {
	tests := []struct {
		name       string
		capability string
		wantErrors []string
	}{
		{name: "a provider's own name is fine", capability: "network"},
		{name: "a name with the reserved word elsewhere is fine", capability: "network-gardener"},
		{
			name:       "a reserved name is refused: Gardener defines none yet",
			capability: "gardener-network",
			wantErrors: []string{"FieldValueInvalid spec.machineCapabilities[1] (gardener-network).name"},
		},
		{
			name:       "a name GEP-0054 proposes is refused until Gardener defines it",
			capability: "gardener-update-type",
			wantErrors: []string{"FieldValueInvalid spec.machineCapabilities[1] (gardener-update-type).name"},
		},
		{
			name:       "a name of the proposal's first draft is refused",
			capability: "gardener-bootType",
			wantErrors: []string{"FieldValueInvalid spec.machineCapabilities[1] (gardener-bootType).name"},
		},
		{
			name:       "a capability name is a qualified name",
			capability: "net work",
			wantErrors: []string{"FieldValueInvalid spec.machineCapabilities[1] (net work).name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := capabilitySpec()
			spec.MachineCapabilities[1].Name = tt.capability
			spec.MachineTypes[1].Capabilities = v1alpha1.Capabilities{"architecture": {"arm64"}}
			spec.MachineImages[0].Versions[0].CapabilityFlavors[0] = v1alpha1.Capabilities{"architecture": {"amd64"}}
			errs, _ := ValidateCloudProfileSpec(spec, field.NewPath("spec"))
			g.Expect(errorsOf(errs)).To(ConsistOf(tt.wantErrors))
		})
	}
}

func TestValidateCapabilityValuesAreQualifiedNames(t *testing.T) {
	g := NewWithT(t)
	spec := capabilitySpec()
	spec.MachineCapabilities[1].Values = []string{"accelerated", "basic", "very fast"}
	errs, _ := ValidateCloudProfileSpec(spec, field.NewPath("spec"))
	g.Expect(errorsOf(errs)).To(ConsistOf("FieldValueInvalid spec.machineCapabilities[1] (network).values[2]"))
}

func TestOneSupportedPerMinorAt(t *testing.T) {
	now := at("2025-06-01T00:00:00Z")
	tests := []struct {
		name       string
		versions   []v1alpha1.ExpirableVersion
		wantErrors []string
	}{
		{
			name: "two deprecated-API supported versions that have both expired are fine",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withDeprecatedAPI("1.30.1", supported, "2025-01-01T00:00:00Z"),
				withDeprecatedAPI("1.30.0", supported, "2024-06-01T00:00:00Z"),
			},
		},
		{
			name: "two deprecated-API supported versions of which one has expired are fine",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withDeprecatedAPI("1.30.1", supported, ""),
				withDeprecatedAPI("1.30.0", supported, "2024-06-01T00:00:00Z"),
			},
		},
		{
			name: "two deprecated-API supported versions expiring later are an error on both",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withDeprecatedAPI("1.30.1", supported, "2026-01-01T00:00:00Z"),
				withDeprecatedAPI("1.30.0", supported, "2025-07-01T00:00:00Z"),
			},
			wantErrors: []string{
				"FieldValueForbidden spec.kubernetes.versions[1] (1.30.1).classification",
				"FieldValueForbidden spec.kubernetes.versions[2] (1.30.0).classification",
			},
		},
		{
			name: "a deprecated-API supported version next to a lifecycle version supported since the past is an error",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withDeprecatedAPI("1.30.1", supported, ""),
				withLifecycle("1.30.0", stage(supported, "2025-01-01T00:00:00Z")),
			},
			wantErrors: []string{"FieldValueForbidden spec.kubernetes.versions[1] (1.30.1).classification"},
		},
		{
			name: "a deprecated-API supported version next to a lifecycle version supported only in the future is an error",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withDeprecatedAPI("1.30.1", supported, ""),
				withLifecycle("1.30.0", stage(preview, ""), stage(supported, "2026-01-01T00:00:00Z")),
			},
			wantErrors: []string{"FieldValueForbidden spec.kubernetes.versions[1] (1.30.1).classification"},
		},
		{
			name: "a lifecycle version whose supported stage ended before now does not count",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withDeprecatedAPI("1.30.1", supported, ""),
				withLifecycle("1.30.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z")),
			},
		},
		{
			name: "two lifecycle versions supported now without end are an error on both, as in Gardener",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withLifecycle("1.30.1", stage(supported, "2025-01-01T00:00:00Z")),
				withLifecycle("1.30.0", stage(supported, "")),
			},
			wantErrors: []string{
				"FieldValueForbidden spec.kubernetes.versions[1] (1.30.1)",
				"FieldValueForbidden spec.kubernetes.versions[2] (1.30.0)",
			},
		},
		{
			name: "a lifecycle version supported now is an error when a later unending supported stage overlaps it",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withLifecycle("1.30.1", stage(preview, ""), stage(supported, "2025-09-01T00:00:00Z")),
				withLifecycle("1.30.0", stage(supported, ""), stage(deprecated, "2026-01-01T00:00:00Z")),
			},
			wantErrors: []string{"FieldValueForbidden spec.kubernetes.versions[2] (1.30.0)"},
		},
		{
			name: "an unending supported stage that starts at now is supported now",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withLifecycle("1.30.1", stage(preview, ""), stage(supported, "2025-06-01T00:00:00Z")),
				withLifecycle("1.30.0", stage(supported, ""), stage(deprecated, "2026-01-01T00:00:00Z")),
			},
			wantErrors: []string{
				"FieldValueForbidden spec.kubernetes.versions[1] (1.30.1)",
				"FieldValueForbidden spec.kubernetes.versions[2] (1.30.0)",
			},
		},
		{
			name: "two bounded supported stages that overlap are fine (a warning), as in Gardener",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withLifecycle("1.30.1", stage(supported, "2025-01-01T00:00:00Z"), stage(deprecated, "2026-06-01T00:00:00Z")),
				withLifecycle("1.30.0", stage(supported, ""), stage(deprecated, "2026-01-01T00:00:00Z")),
			},
		},
		{
			name: "overlapping unending supported stages of which none is supported now are fine (a warning)",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withLifecycle("1.30.1", stage(preview, ""), stage(supported, "2026-01-01T00:00:00Z")),
				withLifecycle("1.30.0", stage(preview, ""), stage(supported, "2025-09-01T00:00:00Z")),
			},
		},
		{
			name: "an unending supported stage that overlapped one ended before now is fine",
			versions: []v1alpha1.ExpirableVersion{
				plain("1.31.0"),
				withLifecycle("1.30.1", stage(supported, "2025-01-01T00:00:00Z")),
				withLifecycle("1.30.0", stage(supported, ""), stage(deprecated, "2025-03-01T00:00:00Z")),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := validSpec()
			spec.Kubernetes.Versions = tt.versions
			errs, _ := ValidateCloudProfileSpecAt(spec, field.NewPath("spec"), now)
			g.Expect(errorsOf(errs)).To(ConsistOf(tt.wantErrors))
		})
	}
}

func TestOneSupportedPerMinorMessageNamesALifecycleVersion(t *testing.T) {
	g := NewWithT(t)
	spec := validSpec()
	spec.Kubernetes.Versions = []v1alpha1.ExpirableVersion{
		plain("1.31.0"),
		withDeprecatedAPI("1.30.1", supported, ""),
		withLifecycle("1.30.0", stage(supported, "2025-01-01T00:00:00Z")),
	}
	errs, _ := ValidateCloudProfileSpecAt(spec, field.NewPath("spec"), at("2025-06-01T00:00:00Z"))
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0].Detail).To(Equal("only one supported version per minor is allowed, but spec.kubernetes.versions[2] (1.30.0) " +
		"is supported at the same time (a version without lifecycle is supported from always until its expirationDate)"))
}

func TestUnendingSupportedOverlapIsRefusedInGardenersWords(t *testing.T) {
	g := NewWithT(t)
	spec := validSpec()
	spec.MachineImages[1].Versions = imageVersions(
		withLifecycle("15.4.1", stage(supported, "2025-01-01T00:00:00Z")),
		withLifecycle("15.4.0", stage(supported, ""), stage(deprecated, "2026-01-01T00:00:00Z")),
	)
	errs, _ := ValidateCloudProfileSpecAt(spec, field.NewPath("spec"), at("2025-06-01T00:00:00Z"))
	g.Expect(errs.ToAggregate().Errors()).To(ConsistOf(
		MatchError(`spec.machineImages[1] (suse).versions[0] (15.4.1): Forbidden: unable to add version "15.4.1" with classification "supported". "supported" lifecycle stages must not overlap per minor version`),
		MatchError(`spec.machineImages[1] (suse).versions[1] (15.4.0): Forbidden: unable to add version "15.4.0" with classification "supported". "supported" lifecycle stages must not overlap per minor version`),
	))
}

func TestValidateContainerRuntimes(t *testing.T) {
	tests := []struct {
		name       string
		cri        []v1alpha1.CRI
		wantErrors []string
	}{
		{name: "a CRI with runtimes is fine", cri: []v1alpha1.CRI{{Name: "containerd", ContainerRuntimes: []v1alpha1.ContainerRuntime{{Type: "gvisor"}, {Type: "kata"}}}}},
		{
			name:       "a CRI listed twice is refused",
			cri:        []v1alpha1.CRI{{Name: "containerd"}, {Name: "containerd"}},
			wantErrors: []string{"FieldValueDuplicate spec.machineImages[1] (suse).versions[0] (15.4).cri[1].name"},
		},
		{
			name:       "a container runtime listed twice is refused",
			cri:        []v1alpha1.CRI{{Name: "containerd", ContainerRuntimes: []v1alpha1.ContainerRuntime{{Type: "gvisor"}, {Type: "gvisor"}}}},
			wantErrors: []string{"FieldValueDuplicate spec.machineImages[1] (suse).versions[0] (15.4).cri[0].containerRuntimes[1].type"},
		},
		{
			name:       "a container runtime type is a qualified name",
			cri:        []v1alpha1.CRI{{Name: "containerd", ContainerRuntimes: []v1alpha1.ContainerRuntime{{Type: "g visor"}}}},
			wantErrors: []string{"FieldValueInvalid spec.machineImages[1] (suse).versions[0] (15.4).cri[0].containerRuntimes[0].type"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := validSpec()
			spec.MachineImages[1].Versions[0].CRI = tt.cri
			errs, _ := ValidateCloudProfileSpec(spec, field.NewPath("spec"))
			g.Expect(errorsOf(errs)).To(ConsistOf(tt.wantErrors))
		})
	}
}
