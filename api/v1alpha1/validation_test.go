package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

// The CEL table below covers every single-object rule of docs/semantics.md
// section 2 that CEL can express. These rules are left to internal/lifecycle
// (called by the controllers, the sync and the CLI) because CEL cannot express
// them, or not within the API server's cost budget:
//   - the highest Kubernetes version may not expire: needs a semver maximum
//     over all versions, which is quadratic in CEL;
//   - one supported version per minor, and the overlap warning for
//     lifecycle versions: compares versions with each other by minor and time;
//   - machine image versions parse as semver, and 1.7 equals 1.7.0: CEL's
//     semver library rejects the short forms Gardener allows;
//   - kubeletVersionConstraint parses as a semver constraint: no CEL function;
//   - a version that left unavailable may not become unavailable again: needs
//     the current time, which CEL transition rules do not have;
//   - everything about NamespacedCloudProfiles and their parent (section 3):
//     needs a second object.

var nameCounter atomic.Int64

// uniqueName keeps table rows independent of each other on the shared API server.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameCounter.Add(1))
}

// The shared builders of times and classifications, by the names this
// package's tests use.
var (
	timeP           = builders.Date
	classificationP = builders.Classification
)

func validCloudProfile() *v1alpha1.CloudProfile {
	strategy := v1alpha1.UpdateStrategyMinor
	return &v1alpha1.CloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("cp")},
		Spec: v1alpha1.CloudProfileSpec{
			Type: "local",
			Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
				{Version: "1.27.0"},
				{Version: "1.28.0", Classification: classificationP(v1alpha1.ClassificationDeprecated), ExpirationDate: timeP("2025-01-01T00:00:00Z")},
				{Version: "1.30.6", Lifecycle: []v1alpha1.LifecycleStage{
					{Classification: v1alpha1.ClassificationPreview},
					{Classification: v1alpha1.ClassificationSupported, StartTime: timeP("2024-12-01T00:00:00Z")},
					{Classification: v1alpha1.ClassificationDeprecated, StartTime: timeP("2025-03-01T00:00:00Z")},
					{Classification: v1alpha1.ClassificationExpired, StartTime: timeP("2025-04-01T00:00:00Z")},
				}},
			}},
			MachineImages: []v1alpha1.MachineImage{{
				Name:           "gardenlinux",
				UpdateStrategy: &strategy,
				Versions: []v1alpha1.MachineImageVersion{
					{ExpirableVersion: v1alpha1.ExpirableVersion{Version: "1592.1"}, Architectures: []string{"amd64", "arm64"}},
				},
			}},
		},
	}
}

func validNamespacedCloudProfile() *v1alpha1.NamespacedCloudProfile {
	return &v1alpha1.NamespacedCloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("ncp"), Namespace: "default"},
		Spec: v1alpha1.NamespacedCloudProfileSpec{
			Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: "local"},
			Kubernetes: &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
				{Version: "1.30.6", Lifecycle: []v1alpha1.LifecycleStage{
					{Classification: v1alpha1.ClassificationExpired, StartTime: timeP("2025-05-01T00:00:00Z")},
				}},
			}},
		},
	}
}

func validProfileSync() *v1alpha1.ProfileSync {
	return &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("sync"), Namespace: "default"},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      "https://git.example.com/platform/profiles.git",
			Ref:      &v1alpha1.GitReference{Branch: "main"},
			Path:     "overlays/dev",
			Interval: metav1.Duration{Duration: time.Minute},
		},
	}
}

func validVersionUpdate() *v1alpha1.VersionUpdate {
	return &v1alpha1.VersionUpdate{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("versions"), Namespace: "default"},
		Spec: v1alpha1.VersionUpdateSpec{
			ProfileSyncRef: meta.LocalObjectReference{Name: "dev"},
			Branch:         "profilesync/versions",
			Interval:       metav1.Duration{Duration: 6 * time.Hour},
		},
	}
}

// withMachineCreationTimeout gives a profile (CloudProfile or
// NamespacedCloudProfile) one machine type whose machine creation timeout is
// written as timeout. The timeout goes into the request as written, not
// through metav1.Duration, which could not hold an invalid one.
func withMachineCreationTimeout(profile client.Object, kind, timeout string) *unstructured.Unstructured {
	data, err := runtime.DefaultUnstructuredConverter.ToUnstructured(profile)
	if err != nil {
		panic(err)
	}
	obj := &unstructured.Unstructured{Object: data}
	obj.SetAPIVersion(v1alpha1.GroupVersion.String())
	obj.SetKind(kind)
	machineType := map[string]any{
		"name": "m5.large", "cpu": "2", "gpu": "0", "memory": "8Gi",
		"machineControllerManager": map[string]any{"machineCreationTimeout": timeout},
	}
	if err := unstructured.SetNestedSlice(obj.Object, []any{machineType}, "spec", "machineTypes"); err != nil {
		panic(err)
	}
	return obj
}

func firstKubernetesLifecycle(cp *v1alpha1.CloudProfile) *[]v1alpha1.LifecycleStage {
	return &cp.Spec.Kubernetes.Versions[2].Lifecycle
}

// TestCreateValidation creates one object per row; a row with an empty
// wantError must be accepted, any other must be refused with a message that
// contains wantError.
func TestCreateValidation(t *testing.T) {
	rows := []struct {
		name      string
		object    func() client.Object
		wantError string
	}{
		{
			name:   "a profile using lifecycle, the deprecated API and no classification at all is accepted",
			object: func() client.Object { return validCloudProfile() },
		},
		{
			name: "an empty provider type and an access restriction of an empty name are accepted, as Gardener accepts them",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.SeedSelector = &v1alpha1.SeedSelector{ProviderTypes: []string{"", "aws"}}
				cp.Spec.Regions = []v1alpha1.Region{{Name: "eu-1", AccessRestrictions: []v1alpha1.AccessRestriction{{Name: ""}, {Name: "eu-access-only"}}}}
				return cp
			},
		},
		{
			name: "lifecycle may not be combined with classification",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.Kubernetes.Versions[2].Classification = classificationP(v1alpha1.ClassificationSupported)
				return cp
			},
			wantError: "lifecycle may not be combined with the deprecated fields classification and expirationDate",
		},
		{
			name: "lifecycle may not be combined with expirationDate",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.Kubernetes.Versions[2].ExpirationDate = timeP("2026-01-01T00:00:00Z")
				return cp
			},
			wantError: "lifecycle may not be combined with the deprecated fields classification and expirationDate",
		},
		{
			name: "lifecycle may not be combined with classification on a machine image version either",
			object: func() client.Object {
				cp := validCloudProfile()
				v := &cp.Spec.MachineImages[0].Versions[0]
				v.Classification = classificationP(v1alpha1.ClassificationSupported)
				v.Lifecycle = []v1alpha1.LifecycleStage{{Classification: v1alpha1.ClassificationSupported}}
				return cp
			},
			wantError: "lifecycle may not be combined with the deprecated fields classification and expirationDate",
		},
		{
			name: "expired may not be written as a deprecated classification",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.Kubernetes.Versions[1].Classification = classificationP(v1alpha1.ClassificationExpired)
				return cp
			},
			wantError: "classification may not be expired",
		},
		{
			name: "unavailable may not be written as a deprecated classification",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.Kubernetes.Versions[1].Classification = classificationP(v1alpha1.ClassificationUnavailable)
				return cp
			},
			wantError: "classification may not be unavailable",
		},
		{
			name: "unavailable may not be declared as a lifecycle stage",
			object: func() client.Object {
				cp := validCloudProfile()
				(*firstKubernetesLifecycle(cp))[0].Classification = v1alpha1.ClassificationUnavailable
				return cp
			},
			wantError: `Unsupported value: "unavailable"`,
		},
		{
			name: "a lifecycle stage may not appear twice",
			object: func() client.Object {
				cp := validCloudProfile()
				lc := firstKubernetesLifecycle(cp)
				(*lc)[2].Classification = v1alpha1.ClassificationSupported
				return cp
			},
			wantError: `lifecycle[2]: Duplicate value: {"classification":"supported"}`,
		},
		{
			name: "lifecycle stages must be in rank order",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.Kubernetes.Versions[2].Lifecycle = []v1alpha1.LifecycleStage{
					{Classification: v1alpha1.ClassificationSupported},
					{Classification: v1alpha1.ClassificationPreview, StartTime: timeP("2025-01-01T00:00:00Z")},
				}
				return cp
			},
			wantError: "lifecycle stages must be in the order preview, supported, deprecated, expired",
		},
		{
			name: "stages may skip ranks",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.Kubernetes.Versions[2].Lifecycle = []v1alpha1.LifecycleStage{
					{Classification: v1alpha1.ClassificationPreview},
					{Classification: v1alpha1.ClassificationExpired, StartTime: timeP("2025-01-01T00:00:00Z")},
				}
				return cp
			},
		},
		{
			name: "only the first stage may omit startTime",
			object: func() client.Object {
				cp := validCloudProfile()
				(*firstKubernetesLifecycle(cp))[2].StartTime = nil
				return cp
			},
			wantError: "only the first lifecycle stage may omit startTime",
		},
		{
			name: "every stage may have a startTime",
			object: func() client.Object {
				cp := validCloudProfile()
				(*firstKubernetesLifecycle(cp))[0].StartTime = timeP("2024-11-01T00:00:00Z")
				return cp
			},
		},
		{
			name: "start times may not decrease",
			object: func() client.Object {
				cp := validCloudProfile()
				(*firstKubernetesLifecycle(cp))[3].StartTime = timeP("2025-02-01T00:00:00Z")
				return cp
			},
			wantError: "lifecycle start times may not decrease",
		},
		{
			name: "start times are compared as times, not as text",
			object: func() client.Object {
				cp := validCloudProfile()
				// 2025-03-01T01:00:00+02:00 is before 2025-03-01T00:00:00Z as text order would say otherwise.
				(*firstKubernetesLifecycle(cp))[3].StartTime = timeP("2025-03-01T01:00:00+02:00")
				return cp
			},
			wantError: "lifecycle start times may not decrease",
		},
		{
			name: "equal start times are allowed",
			object: func() client.Object {
				cp := validCloudProfile()
				(*firstKubernetesLifecycle(cp))[3].StartTime = timeP("2025-03-01T00:00:00Z")
				return cp
			},
		},
		{
			name: "the lifecycle rules hold for machine image versions too",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.MachineImages[0].Versions[0].Lifecycle = []v1alpha1.LifecycleStage{
					{Classification: v1alpha1.ClassificationDeprecated},
					{Classification: v1alpha1.ClassificationSupported, StartTime: timeP("2025-01-01T00:00:00Z")},
				}
				return cp
			},
			wantError: "lifecycle stages must be in the order preview, supported, deprecated, expired",
		},
		{
			name: "Kubernetes versions must be MAJOR.MINOR.PATCH",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.Kubernetes.Versions[0].Version = "1.27"
				return cp
			},
			wantError: "Kubernetes versions must be MAJOR.MINOR.PATCH (digits only, no v prefix)",
		},
		{
			name: "Kubernetes versions may not carry a v prefix or a pre-release",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.Kubernetes.Versions[0].Version = "v1.27.0"
				cp.Spec.Kubernetes.Versions[1].Version = "1.28.0-rc.1"
				return cp
			},
			wantError: "Kubernetes versions must be MAJOR.MINOR.PATCH (digits only, no v prefix)",
		},
		{
			name: "at least one Kubernetes version is required",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.Kubernetes.Versions = nil
				return cp
			},
			wantError: "at least one Kubernetes version is required",
		},
		{
			name: "Kubernetes versions may not repeat",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.Kubernetes.Versions[1] = v1alpha1.ExpirableVersion{Version: "1.27.0"}
				return cp
			},
			wantError: "spec.kubernetes.versions[1]: Duplicate value",
		},
		{
			name: "spec.type is required",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.Type = ""
				return cp
			},
			wantError: "spec.type: Invalid value",
		},
		{
			name: "a machine image needs at least one version",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.MachineImages[0].Versions = nil
				return cp
			},
			wantError: "spec.machineImages[0].versions: Required value",
		},
		{
			name: "machine image names may not repeat",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.MachineImages = append(cp.Spec.MachineImages, *cp.Spec.MachineImages[0].DeepCopy())
				return cp
			},
			wantError: "spec.machineImages[1]: Duplicate value",
		},
		{
			name: "machine image versions may not repeat",
			object: func() client.Object {
				cp := validCloudProfile()
				img := &cp.Spec.MachineImages[0]
				img.Versions = append(img.Versions, *img.Versions[0].DeepCopy())
				return cp
			},
			wantError: "spec.machineImages[0].versions[1]: Duplicate value",
		},
		{
			name: "updateStrategy must be patch, minor or major",
			object: func() client.Object {
				cp := validCloudProfile()
				strategy := v1alpha1.MachineImageUpdateStrategy("latest")
				cp.Spec.MachineImages[0].UpdateStrategy = &strategy
				return cp
			},
			wantError: `spec.machineImages[0].updateStrategy: Unsupported value: "latest"`,
		},
		{
			name: "architectures must be amd64 or arm64",
			object: func() client.Object {
				cp := validCloudProfile()
				cp.Spec.MachineImages[0].Versions[0].Architectures = []string{"s390x"}
				return cp
			},
			wantError: `spec.machineImages[0].versions[0].architectures[0]: Unsupported value: "s390x"`,
		},
		{
			name:   "a namespaced profile with a parent and an expiry override is accepted",
			object: func() client.Object { return validNamespacedCloudProfile() },
		},
		{
			name: "a namespaced profile's parent must be a CloudProfile",
			object: func() client.Object {
				ncp := validNamespacedCloudProfile()
				ncp.Spec.Parent.Kind = "NamespacedCloudProfile"
				return ncp
			},
			wantError: `spec.parent.kind: Unsupported value: "NamespacedCloudProfile"`,
		},
		{
			name: "a namespaced profile's overrides follow the lifecycle rules",
			object: func() client.Object {
				ncp := validNamespacedCloudProfile()
				ncp.Spec.Kubernetes.Versions[0].ExpirationDate = timeP("2025-05-01T00:00:00Z")
				return ncp
			},
			wantError: "lifecycle may not be combined with the deprecated fields classification and expirationDate",
		},
		{
			name:   "a ProfileSync following a branch is accepted",
			object: func() client.Object { return validProfileSync() },
		},
		{
			name: "a ProfileSync may follow a branch at a pinned commit",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Ref.Commit = strings.Repeat("a", 40)
				return ps
			},
		},
		{
			name: "a ProfileSync may verify the signature of the commit it applies against a Secret of keys",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Verify = &v1alpha1.SignatureVerification{Mode: v1alpha1.VerifyHEAD, SecretRef: meta.LocalObjectReference{Name: "signers"}}
				return ps
			},
		},
		{
			name: "a ProfileSync verifies in modes HEAD, Tag and TagAndHEAD only",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Verify = &v1alpha1.SignatureVerification{Mode: "Commit", SecretRef: meta.LocalObjectReference{Name: "signers"}}
				return ps
			},
			wantError: `spec.verify.mode: Unsupported value: "Commit"`,
		},
		{
			name: "a path rule needs principals",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Verify = &v1alpha1.SignatureVerification{Mode: v1alpha1.VerifyTagAndHEAD, SecretRef: meta.LocalObjectReference{Name: "signers"},
					PathRules: []v1alpha1.SignaturePathRule{{Paths: []string{"overlays/prod/**"}}}}
				return ps
			},
			wantError: `spec.verify.pathRules[0].principals`,
		},
		{
			name: "maxCommits is at least one",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Verify = &v1alpha1.SignatureVerification{SecretRef: meta.LocalObjectReference{Name: "signers"}, MaxCommits: -1}
				return ps
			},
			wantError: `spec.verify.maxCommits`,
		},
		{
			name: "a ProfileSync may not set both tag and semver",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Ref = &v1alpha1.GitReference{Tag: "v1.0.0", SemVer: ">=1.0.0"}
				return ps
			},
			wantError: "set at most one of tag, semver and commit",
		},
		{
			name: "a ProfileSync may not combine branch and tag",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Ref.Tag = "v1.0.0"
				return ps
			},
			wantError: "branch may be combined only with commit",
		},
		{
			name: "a ProfileSync commit is a full SHA-1",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Ref = &v1alpha1.GitReference{Commit: "abc123"}
				return ps
			},
			wantError: "spec.ref.commit: Invalid value",
		},
		{
			name: "a ProfileSync path may not leave the repository",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Path = "overlays/../../etc"
				return ps
			},
			wantError: "path must be relative and stay inside the repository",
		},
		{
			name: "a ProfileSync path may not be absolute",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Path = "/etc"
				return ps
			},
			wantError: "path must be relative and stay inside the repository",
		},
		{
			name: "a machine creation timeout of any Go duration form is accepted",
			object: func() client.Object {
				return withMachineCreationTimeout(validCloudProfile(), v1alpha1.CloudProfileKind, "1h30m")
			},
		},
		{
			name: "a machine creation timeout of zero is accepted",
			object: func() client.Object {
				return withMachineCreationTimeout(validCloudProfile(), v1alpha1.CloudProfileKind, "0")
			},
		},
		{
			name: "a negative machine creation timeout is refused, as Gardener refuses it",
			object: func() client.Object {
				return withMachineCreationTimeout(validCloudProfile(), v1alpha1.CloudProfileKind, "-5m")
			},
			wantError: "machineCreationTimeout may not be negative",
		},
		{
			name: "a machine creation timeout that is no Go duration is refused: clients could not read it back",
			object: func() client.Object {
				return withMachineCreationTimeout(validCloudProfile(), v1alpha1.CloudProfileKind, "20 minutes")
			},
			wantError: "spec.machineTypes[0].machineControllerManager.machineCreationTimeout: Invalid value: \"20 minutes\": spec.machineTypes[0].machineControllerManager.machineCreationTimeout in body should match",
		},
		{
			name: "a namespaced machine type's creation timeout is checked as a profile's",
			object: func() client.Object {
				return withMachineCreationTimeout(validNamespacedCloudProfile(), v1alpha1.NamespacedCloudProfileKind, "-1s")
			},
			wantError: "machineCreationTimeout may not be negative",
		},
		{
			name: "a ProfileSync may name its landscape",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Landscape = "prod-eu"
				return ps
			},
		},
		{
			name: "a ProfileSync landscape is a DNS label, as the rollout file's names are",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Landscape = "Prod_EU"
				return ps
			},
			wantError: "spec.landscape: Invalid value",
		},
		{
			name: "a ProfileSync may record its revisions and take a hotfix of its branch",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Rollout = &v1alpha1.ProfileSyncRollout{Record: ptr.To(true), Hotfix: strings.Repeat("ab", 20)}
				return ps
			},
		},
		{
			name: "a ProfileSync may hold its landscape",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Rollout = &v1alpha1.ProfileSyncRollout{Hold: true}
				return ps
			},
		},
		{
			name: "a ProfileSync hotfix is a full SHA-1",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Rollout = &v1alpha1.ProfileSyncRollout{Hotfix: "abc123"}
				return ps
			},
			wantError: "spec.rollout.hotfix: Invalid value",
		},
		{
			name: "a ProfileSync may not hold and take a hotfix at once",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Rollout = &v1alpha1.ProfileSyncRollout{Hold: true, Hotfix: strings.Repeat("ab", 20)}
				return ps
			},
			wantError: "set at most one of hold and hotfix",
		},
		{
			name: "a ProfileSync hotfix needs a branch to follow, not a tag",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Ref = &v1alpha1.GitReference{Tag: "v1.0.0"}
				ps.Spec.Rollout = &v1alpha1.ProfileSyncRollout{Hotfix: strings.Repeat("ab", 20)}
				return ps
			},
			wantError: "spec.rollout.hotfix needs a ProfileSync that follows a branch",
		},
		{
			name: "a ProfileSync url must be https, http or ssh",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.URL = "file:///srv/profiles"
				return ps
			},
			wantError: "spec.url: Invalid value",
		},
		{
			name: "a ProfileSync timeout of the maximum is accepted",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Timeout = &metav1.Duration{Duration: v1alpha1.MaxSyncTimeout}
				return ps
			},
		},
		{
			name: "a ProfileSync may warn of drift instead of correcting it",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.DriftDetection = &v1alpha1.DriftDetection{Mode: v1alpha1.DriftDetectionWarn}
				return ps
			},
		},
		{
			name: "a ProfileSync drift detection mode is correct or warn",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.DriftDetection = &v1alpha1.DriftDetection{Mode: "ignore"}
				return ps
			},
			wantError: `spec.driftDetection.mode: Unsupported value: "ignore"`,
		},
		{
			name: "a ProfileSync timeout over the maximum is refused: one commit may not hold a worker longer",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.Timeout = &metav1.Duration{Duration: v1alpha1.MaxSyncTimeout + time.Second}
				return ps
			},
			wantError: "spec.timeout: Invalid value: \"10m1s\": timeout may be at most 10m",
		},
		{
			name: "a ProfileSync secretRef names a secret",
			object: func() client.Object {
				ps := validProfileSync()
				ps.Spec.SecretRef = &meta.LocalObjectReference{Name: "git-credentials"}
				return ps
			},
		},
		{
			name:   "a VersionUpdate naming its ProfileSync, a branch and an interval is accepted",
			object: func() client.Object { return validVersionUpdate() },
		},
		{
			name: "a VersionUpdate's branch is a Git branch name",
			object: func() client.Object {
				vu := validVersionUpdate()
				vu.Spec.Branch = "profilesync/../main"
				return vu
			},
			wantError: "branch must be a Git branch name",
		},
		{
			name: "a VersionUpdate's branch may not be an option",
			object: func() client.Object {
				vu := validVersionUpdate()
				vu.Spec.Branch = "-delete"
				return vu
			},
			wantError: "spec.branch: Invalid value",
		},
		{
			name: "a VersionUpdate's interval is at least a second",
			object: func() client.Object {
				vu := validVersionUpdate()
				vu.Spec.Interval = metav1.Duration{Duration: time.Millisecond}
				return vu
			},
			wantError: "interval must be at least 1s",
		},
		{
			name: "a VersionUpdate's author has an email address",
			object: func() client.Object {
				vu := validVersionUpdate()
				vu.Spec.Author = &v1alpha1.CommitAuthor{Name: "Version Bot", Email: "versions"}
				return vu
			},
			wantError: "author.email must be an email address",
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := row.object()
			err := k8sClient.Create(context.Background(), obj)
			if row.wantError == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(k8sClient.Delete(context.Background(), obj)).To(Succeed())
				return
			}
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(row.wantError))
		})
	}
}

func TestNamespacedCloudProfileParentIsImmutable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ncp := validNamespacedCloudProfile()
	g.Expect(k8sClient.Create(ctx, ncp)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, ncp) })

	ncp.Spec.MachineTypes = nil // other fields stay changeable
	ncp.Spec.Kubernetes.Versions[0].Lifecycle[0].StartTime = timeP("2025-06-01T00:00:00Z")
	g.Expect(k8sClient.Update(ctx, ncp)).To(Succeed())

	ncp.Spec.Parent.Name = "another"
	err := k8sClient.Update(ctx, ncp)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("parent is immutable"))
}

func TestMachineImageUpdateStrategyDefaultsToMajor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp := validCloudProfile()
	cp.Spec.MachineImages[0].UpdateStrategy = nil
	g.Expect(k8sClient.Create(ctx, cp)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, cp) })

	g.Expect(cp.Spec.MachineImages[0].UpdateStrategy).NotTo(BeNil())
	g.Expect(*cp.Spec.MachineImages[0].UpdateStrategy).To(Equal(v1alpha1.UpdateStrategyMajor))

	// A namespaced override that leaves updateStrategy out must keep the
	// parent's strategy, so it gets no default.
	ncp := validNamespacedCloudProfile()
	ncp.Spec.MachineImages = []v1alpha1.NamespacedMachineImage{{Name: "gardenlinux"}}
	g.Expect(k8sClient.Create(ctx, ncp)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, ncp) })
	g.Expect(ncp.Spec.MachineImages[0].UpdateStrategy).To(BeNil())
}

// TestProviderConfigTakesAnyJSONValue stores providerConfigs that are not
// objects and reads them back unchanged. Gardener's field is a RawExtension,
// which takes any JSON value; its own example profile
// (example/30-cloudprofile.yaml) holds a placeholder string there.
func TestProviderConfigTakesAnyJSONValue(t *testing.T) {
	for _, raw := range []string{`"<some-provider-specific-cloudprofile-config>"`, `["a",1]`, `42`, `true`, `{"kind":"CloudProfileConfig","nested":{"a":[1]}}`} {
		t.Run(raw, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()

			cp := validCloudProfile()
			cp.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(raw)}
			g.Expect(k8sClient.Create(ctx, cp)).To(Succeed())
			gotCP := &v1alpha1.CloudProfile{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cp), gotCP)).To(Succeed())
			g.Expect(gotCP.Spec.ProviderConfig).NotTo(BeNil())
			g.Expect(string(gotCP.Spec.ProviderConfig.Raw)).To(MatchJSON(raw))
			g.Expect(k8sClient.Delete(ctx, cp)).To(Succeed())

			ncp := validNamespacedCloudProfile()
			ncp.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(raw)}
			g.Expect(k8sClient.Create(ctx, ncp)).To(Succeed())
			gotNCP := &v1alpha1.NamespacedCloudProfile{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ncp), gotNCP)).To(Succeed())
			g.Expect(gotNCP.Spec.ProviderConfig).NotTo(BeNil())
			g.Expect(string(gotNCP.Spec.ProviderConfig.Raw)).To(MatchJSON(raw))
			g.Expect(k8sClient.Delete(ctx, ncp)).To(Succeed())
		})
	}
}

// TestNamespacedImageOverrideTakesNullVersions stores an image override
// written as Gardener writes one that changes only updateStrategy: its
// versions field has no omitempty there, so it reads versions: null.
func TestNamespacedImageOverrideTakesNullVersions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ncp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "NamespacedCloudProfile",
		"metadata":   map[string]any{"name": uniqueName("ncp"), "namespace": "default"},
		"spec": map[string]any{
			"parent":        map[string]any{"kind": "CloudProfile", "name": "local"},
			"machineImages": []any{map[string]any{"name": "gardenlinux", "updateStrategy": "patch", "versions": nil}},
		},
	}}
	g.Expect(k8sClient.Create(ctx, ncp)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, ncp) })

	got := &v1alpha1.NamespacedCloudProfile{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ncp), got)).To(Succeed())
	g.Expect(got.Spec.MachineImages).To(HaveLen(1))
	g.Expect(got.Spec.MachineImages[0].Versions).To(BeEmpty())
}

// TestFieldsGardenerAddedAreStored stores the fields Gardener's v1beta1
// types gained this year and reads them back.
func TestFieldsGardenerAddedAreStored(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp := validCloudProfile()
	allow := true
	cp.Spec.ControlPlane = &v1alpha1.ControlPlane{AllowZonePinning: &allow}
	cp.Spec.MachineTypes = []v1alpha1.MachineType{{
		Name: "m5.large", CPU: resource.MustParse("2"), GPU: resource.MustParse("0"), Memory: resource.MustParse("8Gi"),
		MachineControllerManager: &v1alpha1.MachineTypeMachineControllerManager{MachineCreationTimeout: &metav1.Duration{Duration: 20 * time.Minute}},
	}}
	g.Expect(k8sClient.Create(ctx, cp)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, cp) })

	got := &v1alpha1.CloudProfile{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cp), got)).To(Succeed())
	g.Expect(got.Spec.ControlPlane).To(Equal(cp.Spec.ControlPlane))
	g.Expect(got.Spec.MachineTypes[0].MachineControllerManager).To(Equal(cp.Spec.MachineTypes[0].MachineControllerManager))
}
