package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilesync/profilesync/internal/lifecycle"
	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// landscape is the shape of the benchmark repository: one overlay that
// renders cloudProfiles CloudProfiles, each with kubernetesVersions
// Kubernetes versions and images machine images of imageVersions versions,
// all with 4-stage lifecycles, and namespaced NamespacedCloudProfiles spread
// over namespaces tenant namespaces, each overriding the expiry of one
// Kubernetes version of its parent.
type landscape struct {
	cloudProfiles, kubernetesVersions, images, imageVersions int
	namespaced, namespaces                                   int
	// base is the preview start of version 0; version i starts i weeks later.
	base time.Time
}

// overlayPath is where the landscape's overlay lives in the repository.
const overlayPath = "overlays/bench"

// day is a calendar day, for start times.
const day = 24 * time.Hour

// stageTimes are the starts of preview, supported, deprecated and expired of
// the i-th version: a weekly release train, supported for 29 days, expired
// 400 days after release. Every version is alone in its minor (1.<i>.0 for
// Kubernetes), so supported windows never overlap.
func (l landscape) stageTimes(i int) [4]time.Time {
	preview := l.base.Add(time.Duration(i) * 7 * day)
	return [4]time.Time{preview, preview.Add(day), preview.Add(30 * day), preview.Add(400 * day)}
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// lifecycleYAML is one version's lifecycle in flow style; expires=false
// leaves out the expired stage (the highest Kubernetes version may not
// expire). expiredShift moves the expired stage.
func (l landscape) lifecycleYAML(i int, expires bool, expiredShift time.Duration) string {
	t := l.stageTimes(i)
	s := fmt.Sprintf(`[{classification: preview, startTime: "%s"}, {classification: supported, startTime: "%s"}, {classification: deprecated, startTime: "%s"}`,
		rfc3339(t[0]), rfc3339(t[1]), rfc3339(t[2]))
	if expires {
		s += fmt.Sprintf(`, {classification: expired, startTime: "%s"}`, rfc3339(t[3].Add(expiredShift)))
	}
	return s + "]"
}

func cloudProfileName(i int) string { return fmt.Sprintf("bench-cp-%03d", i) }
func namespaceName(i int) string    { return fmt.Sprintf("bench-tenant-%02d", i) }

// pushedVersion is the Kubernetes version whose expiry the pushes of S4
// move: its next transition is its expiry, so the move shows in status.
const pushedVersion = 10

// cloudProfileYAML renders the i-th CloudProfile; shift moves the expiry of
// pushedVersion.
func (l landscape) cloudProfileYAML(i int, shift time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: %s\nspec:\n  type: bench\n  kubernetes:\n    versions:\n", cloudProfileName(i))
	for v := range l.kubernetesVersions {
		var s time.Duration
		if v == pushedVersion {
			s = shift
		}
		fmt.Fprintf(&b, "    - {version: 1.%d.0, lifecycle: %s}\n", v, l.lifecycleYAML(v, v < l.kubernetesVersions-1, s))
	}
	b.WriteString("  machineImages:\n")
	for n := range l.images {
		fmt.Fprintf(&b, "  - name: image-%d\n    updateStrategy: minor\n    versions:\n", n)
		for v := range l.imageVersions {
			fmt.Fprintf(&b, "    - {version: %d.%d.0, architectures: [amd64, arm64], lifecycle: %s}\n", 1000+n, v, l.lifecycleYAML(v, true, 0))
		}
	}
	b.WriteString("  machineTypes:\n  - {name: m5.large, cpu: \"2\", gpu: \"0\", memory: 8Gi, architecture: amd64}\n")
	b.WriteString("  regions:\n  - name: eu-1\n")
	return b.String()
}

// namespacedYAML renders the j-th NamespacedCloudProfile: it keeps Kubernetes
// 1.0.0 of its parent 100 days longer.
func (l landscape) namespacedYAML(j int) string {
	return fmt.Sprintf(`apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: bench-ncp-%04d
  namespace: %s
spec:
  parent: {kind: CloudProfile, name: %s}
  kubernetes:
    versions:
    - {version: 1.0.0, lifecycle: [{classification: expired, startTime: "%s"}]}
`, j, namespaceName(j%l.namespaces), cloudProfileName(j%l.cloudProfiles), rfc3339(l.stageTimes(0)[3].Add(100*day)))
}

// cloudProfilesPerFile groups the CloudProfiles into files of this many.
const cloudProfilesPerFile = 10

func cloudProfilesFile(i int) string {
	return fmt.Sprintf("base/cloudprofiles-%02d.yaml", i/cloudProfilesPerFile)
}

// files renders the repository: base/ with the profiles, overlays/bench with
// a kustomization that adds a label to everything.
func (l landscape) files() map[string]string {
	files := map[string]string{}
	var resources []string
	for i := range l.cloudProfiles {
		file := cloudProfilesFile(i)
		if _, ok := files[file]; !ok {
			resources = append(resources, strings.TrimPrefix(file, "base/"))
			files[file] = ""
		} else {
			files[file] += "---\n"
		}
		files[file] += l.cloudProfileYAML(i, 0)
	}
	for n := range l.namespaces {
		file := fmt.Sprintf("base/namespaced-%02d.yaml", n)
		resources = append(resources, strings.TrimPrefix(file, "base/"))
		var docs []string
		for j := n; j < l.namespaced; j += l.namespaces {
			docs = append(docs, l.namespacedYAML(j))
		}
		files[file] = strings.Join(docs, "---\n")
	}
	files["base/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + strings.Join(resources, "\n- ") + "\n"
	files[overlayPath+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../base\nlabels:\n- pairs:\n    landscape: bench\n"
	return files
}

// cloudProfilesFileYAML is the content of the file holding the i-th
// CloudProfile, with that profile's pushed version's expiry moved by shift.
func (l landscape) cloudProfilesFileYAML(i int, shift time.Duration) string {
	first := i - i%cloudProfilesPerFile
	var docs []string
	for j := first; j < first+cloudProfilesPerFile && j < l.cloudProfiles; j++ {
		var s time.Duration
		if j == i {
			s = shift
		}
		docs = append(docs, l.cloudProfileYAML(j, s))
	}
	return strings.Join(docs, "---\n")
}

// writeFiles writes files under dir.
func writeFiles(dir string, files map[string]string) error {
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// renderLandscape builds the overlay of the files and loads its profiles
// as one set at now (profile.Load, as the CLI does; every parent is in the
// landscape). A set with problems, which the sync would refuse, is an
// error; its warnings are the caller's to judge.
func renderLandscape(dir string, files map[string]string) (*profile.Set, error) {
	if err := writeFiles(dir, files); err != nil {
		return nil, err
	}
	docs, err := overlay.Build(context.Background(), dir, overlayPath, overlay.DefaultLimits())
	if err != nil {
		return nil, err
	}
	set, err := profile.Load(docs, nil, time.Now())
	if err != nil {
		return nil, fmt.Errorf("loading the landscape: %w", err)
	}
	if len(set.Problems) > 0 {
		return nil, set.Problems
	}
	return set, nil
}

func TestTheBenchmarkLandscapeRendersValidProfiles(t *testing.T) {
	g := NewWithT(t)
	small := landscape{cloudProfiles: 3, kubernetesVersions: 20, images: 2, imageVersions: 10, namespaced: 7, namespaces: 2,
		base: time.Now().Add(-300 * day).Truncate(day)}
	files := small.files()
	set, err := renderLandscape(t.TempDir(), files)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.Objects).To(HaveLen(3 + 7))
	g.Expect(set.Warnings).To(BeEmpty())
	for _, o := range set.Objects {
		if o.CloudProfile == nil {
			continue
		}
		g.Expect(o.CloudProfile.Labels).To(HaveKeyWithValue("landscape", "bench"))
		errs, warnings := lifecycle.ValidateCloudProfileSpec(&o.CloudProfile.Spec, field.NewPath("spec"))
		g.Expect(errs).To(BeEmpty())
		g.Expect(warnings).To(BeEmpty())
		g.Expect(o.CloudProfile.Spec.Kubernetes.Versions).To(HaveLen(20))
		g.Expect(o.CloudProfile.Spec.MachineImages).To(HaveLen(2))
		g.Expect(o.CloudProfile.Spec.MachineImages[1].Versions).To(HaveLen(10))
		g.Expect(o.CloudProfile.Spec.Kubernetes.Versions[0].Lifecycle).To(HaveLen(4))
	}
	g.Expect(small.cloudProfileYAML(0, time.Hour)).NotTo(Equal(small.cloudProfileYAML(0, 0)), "a push changes the profile")
}
