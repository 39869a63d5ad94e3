package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

// heldPatches splits the held objects' section of diff --cluster's table
// output into its YAML documents, each opened by its comment line.
func heldPatches(t *testing.T, stdout string) []string {
	t.Helper()
	_, section, found := strings.Cut(stdout, "\nHeld in the cluster: ")
	if !found {
		t.Fatalf("no held objects in the output:\n%s", stdout)
	}
	docs := strings.Split(section, "---\n")
	return docs[1:]
}

// buildWithPatches builds the overlay at root/overlayDir with the patch files
// added to its kustomization's patches, through the build the sync uses.
func buildWithPatches(t *testing.T, root, overlayDir string, patches []string) []profile.Object {
	t.Helper()
	g := NewWithT(t)
	kustomization := filepath.Join(root, overlayDir, "kustomization.yaml")
	content, err := os.ReadFile(kustomization)
	g.Expect(err).NotTo(HaveOccurred())
	var list strings.Builder
	list.WriteString("patches:\n")
	for i, patch := range patches {
		name := fmt.Sprintf("hold-%d.yaml", i)
		g.Expect(os.WriteFile(filepath.Join(root, overlayDir, name), []byte(patch), 0o644)).To(Succeed())
		list.WriteString("- path: " + name + "\n")
	}
	g.Expect(os.WriteFile(kustomization, append(content, list.String()...), 0o644)).To(Succeed())
	docs, err := overlay.Build(context.Background(), root, overlayDir, overlay.DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	objects, problems := profile.DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty())
	return objects
}

// TestDiffWithTheClusterShowsTheHeldDriftAsAPatchForTheOverlay breaks glass
// on the CloudProfile and the NamespacedCloudProfile that main's prod overlay
// built, and checks that the patches diff --cluster prints for them, added to
// the overlay, make it build exactly what the cluster holds.
func TestDiffWithTheClusterShowsTheHeldDriftAsAPatchForTheOverlay(t *testing.T) {
	kubeconfig, c := startCluster(t)
	ctx := context.Background()
	g := NewWithT(t)
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-payments"}})).To(Succeed())
	apply(t, c, diffFixtureMain, filepath.Join("overlays", "prod"))
	stage := func(classification v1alpha1.VersionClassification, start string) v1alpha1.LifecycleStage {
		s := v1alpha1.LifecycleStage{Classification: classification}
		if start != "" {
			s.StartTime = builders.Date(start)
		}
		return s
	}

	// 02:00: 1.33.5 and gardenlinux 1877.3.0 are broken.
	aws := &v1alpha1.CloudProfile{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "aws"}, aws)).To(Succeed())
	aws.Annotations = map[string]string{
		v1alpha1.HoldUntilAnnotation:  "2026-11-25T00:00:00Z",
		v1alpha1.HoldReasonAnnotation: "INC-7: 1.33.5 and\ngardenlinux 1877.3.0 are broken",
	}
	versions := aws.Spec.Kubernetes.Versions
	g.Expect(versions[1].Version).To(Equal("1.33.5"))
	versions[1].Lifecycle = append(versions[1].Lifecycle[:1],
		stage(v1alpha1.ClassificationDeprecated, "2026-11-22T02:00:00Z"), stage(v1alpha1.ClassificationExpired, "2026-11-29T00:00:00Z"))
	g.Expect(versions[0].Version).To(Equal("1.32.9"))
	versions[0].Lifecycle = []v1alpha1.LifecycleStage{stage(v1alpha1.ClassificationSupported, ""), stage(v1alpha1.ClassificationExpired, "2026-12-01T00:00:00Z")}
	g.Expect(versions[2].Version).To(Equal("1.33.7"))
	aws.Spec.Kubernetes.Versions = append(versions[:3], append([]v1alpha1.ExpirableVersion{{Version: "1.33.8",
		Lifecycle: []v1alpha1.LifecycleStage{stage(v1alpha1.ClassificationPreview, "")}}}, versions[3:]...)...)
	gardenlinux := &aws.Spec.MachineImages[0]
	g.Expect(gardenlinux.Versions[0].Version).To(Equal("1877.3.0"))
	deprecated := v1alpha1.ClassificationDeprecated
	gardenlinux.Versions[0].Classification = &deprecated
	gardenlinux.Versions[0].Architectures = []string{"amd64"}
	fixed := *gardenlinux.Versions[0].DeepCopy()
	fixed.Version, fixed.Classification, fixed.Architectures = "1877.3.1", nil, []string{"amd64", "arm64"}
	gardenlinux.Versions = append(gardenlinux.Versions[:1], append([]v1alpha1.MachineImageVersion{fixed}, gardenlinux.Versions[1:]...)...)
	ubuntu := &aws.Spec.MachineImages[1]
	g.Expect(ubuntu.Versions[1].Version).To(Equal("22.4.5"))
	ubuntu.Versions = ubuntu.Versions[:1]
	g.Expect(c.Update(ctx, aws)).To(Succeed())

	payments := &v1alpha1.NamespacedCloudProfile{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "team-payments", Name: "aws-payments"}, payments)).To(Succeed())
	payments.Annotations = map[string]string{v1alpha1.HoldUntilAnnotation: "2026-11-23T00:00:00Z"}
	payments.Spec.Kubernetes.Versions[0].Lifecycle[0].StartTime = builders.Date("2026-12-01T00:00:00Z")
	g.Expect(c.Update(ctx, payments)).To(Succeed())
	// The sync honours both holds: its plan lists them in the ProfileSync's
	// status.holds, with the fields each waits on.
	landscape := honourHolds(t, c,
		heldOn(v1alpha1.CloudProfileKind, "", "aws", "2026-11-25T00:00:00Z", "spec"),
		heldOn(v1alpha1.NamespacedCloudProfileKind, "team-payments", "aws-payments", "2026-11-23T00:00:00Z", "spec"))

	head := t.TempDir()
	copyTree(t, diffFixtureMain, head)
	prod := filepath.Join("overlays", "prod")
	status, stdout, stderr := run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", head, prod, "--at", diffTime)
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stderr).To(BeEmpty())
	patches := heldPatches(t, stdout)
	g.Expect(patches).To(HaveLen(2))
	g.Expect(patches[0]).To(HavePrefix("# CloudProfile/aws: held until 2026-11-25T00:00:00Z (INC-7: 1.33.5 and gardenlinux 1877.3.0 are broken)\n"))
	g.Expect(patches[0]).To(ContainSubstring("\n    - $patch: delete\n      version: 22.4.5\n"), "a version the cluster removed is deleted by its key")
	g.Expect(patches[0]).To(ContainSubstring("      version: 1877.3.0\n    - architectures:\n      - amd64\n      - arm64\n      version: 1877.3.1\n"),
		"an added version follows the version it follows in the cluster")
	g.Expect(patches[0]).To(ContainSubstring("    - version: 1.33.7\n    - lifecycle:\n      - classification: preview\n      version: 1.33.8\n"),
		"an added version follows the key of the unchanged version it follows in the cluster")
	g.Expect(patches[0]).To(ContainSubstring("      - $patch: delete\n        classification: deprecated\n"), "a lifecycle stage the cluster removed")
	g.Expect(patches[0]).NotTo(ContainSubstring("1.34.2"), "only the drifted fields")
	g.Expect(patches[1]).To(Equal("# NamespacedCloudProfile/team-payments/aws-payments: held until 2026-11-23T00:00:00Z\n" + `apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: aws-payments
  namespace: team-payments
spec:
  kubernetes:
    versions:
    - lifecycle:
      - classification: expired
        startTime: "2026-12-01T00:00:00Z"
      version: 1.32.9
`))

	status, stdout, stderr = run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", head, prod, "--at", diffTime, "-o", "markdown")
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stdout).To(ContainSubstring("\n### Held in the cluster\n\n"))
	g.Expect(stdout).To(ContainSubstring("\n#### NamespacedCloudProfile/team-payments/aws-payments\n\nheld until 2026-11-23T00:00:00Z\n\n```yaml\n"+
		strings.SplitN(patches[1], "\n", 2)[1]+"```\n"), "the same patch, in a YAML block of the pull-request comment")

	built := buildWithPatches(t, head, prod, patches)
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(aws), aws)).To(Succeed())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(payments), payments)).To(Succeed())
	g.Expect(built).To(HaveLen(2))
	for _, o := range built {
		if o.CloudProfile != nil {
			g.Expect(o.CloudProfile.Spec).To(BeComparableTo(aws.Spec), "the overlay with the patch builds what the cluster holds, in its order")
		} else {
			g.Expect(o.NamespacedCloudProfile.Spec).To(BeComparableTo(payments.Spec))
		}
	}

	status, stdout, stderr = run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", head, prod, "--at", diffTime)
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stdout).To(ContainSubstring("No changes"), "Git has caught up")
	g.Expect(stdout).To(ContainSubstring("# CloudProfile/aws: held until 2026-11-25T00:00:00Z (INC-7: 1.33.5 and gardenlinux 1877.3.0 are broken)\n" +
		"# The overlay already builds what the cluster holds: the hold ends at the next sync.\n"))

	status, stdout, stderr = run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", head, prod, "--at", "2026-11-24T00:00:00Z", "-o", "json")
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(decodeDiffJSON(t, stdout).Landscapes).To(HaveLen(1), "JSON output stays the report alone")
	g.Expect(stderr).To(Equal("warning: cluster: NamespacedCloudProfile/team-payments/aws-payments: the sync does not honour this hold: " +
		"annotation profilesync.io/hold-until: 2026-11-23T00:00:00Z is not in the future; remove the hold annotations, or set a later expiry\n" +
		"note: held in the cluster: CloudProfile/aws; -o table or -o markdown shows the patch that brings the overlay to each\n"))

	// A hold under which nothing has drifted yet (set before the edit) is
	// not ended by an overlay that builds what the cluster holds: the
	// sync's plan keeps it until it expires or is removed, and diff
	// --cluster says what the plan does.
	landscape.Status.Holds[0].DriftedFields = nil
	g.Expect(c.Status().Update(ctx, landscape)).To(Succeed())
	status, stdout, stderr = run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", head, prod, "--at", diffTime)
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stdout).To(ContainSubstring("# CloudProfile/aws: held until 2026-11-25T00:00:00Z (INC-7: 1.33.5 and gardenlinux 1877.3.0 are broken)\n" +
		"# Nothing has drifted under this hold yet: it holds any edit until it expires or is removed, whatever the overlay builds.\n"))
	g.Expect(stdout).NotTo(ContainSubstring("# CloudProfile/aws: held until 2026-11-25T00:00:00Z (INC-7: 1.33.5 and gardenlinux 1877.3.0 are broken)\n" +
		"# The overlay already builds what the cluster holds"))

	// A hold the sync refused (status.holds does not list it: say, one
	// beyond its --max-hold) is no hold: diff --cluster says so and shows
	// no patch, whatever the profile's own status says.
	landscape.Status.Holds = landscape.Status.Holds[1:]
	g.Expect(c.Status().Update(ctx, landscape)).To(Succeed())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(aws), aws)).To(Succeed())
	aws.Status.HeldUntil = builders.Date("2026-11-25T00:00:00Z")
	g.Expect(c.Status().Update(ctx, aws)).To(Succeed())
	status, stdout, stderr = run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", head, prod, "--at", diffTime)
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stderr).To(ContainSubstring("warning: cluster: CloudProfile/aws: the sync does not honour this hold: its ProfileSync's status.holds does not list it " +
		"(refused, see the HoldRefused event of its ProfileSync, or not judged yet): the sync puts Git's fields back\n"))
	g.Expect(stdout).NotTo(ContainSubstring("# CloudProfile/aws: held until"))
}

// heldOn is a hold the sync honours on one object, waiting on fields.
func heldOn(kind, namespace, name, until string, fields ...string) v1alpha1.ObjectHold {
	return v1alpha1.ObjectHold{
		InventoryEntry: v1alpha1.InventoryEntry{Kind: kind, Namespace: namespace, Name: name},
		Until:          *builders.Date(until), DriftedFields: fields,
	}
}

// honourHolds makes the landscape's ProfileSync, whose inventory lists the
// held objects and whose status.holds lists holds: what the sync's plan
// records when it honours them.
func honourHolds(t *testing.T, c client.Client, holds ...v1alpha1.ObjectHold) *v1alpha1.ProfileSync {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden"}}))).To(Succeed())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Namespace: "garden", Name: "landscape"},
		Spec:       v1alpha1.ProfileSyncSpec{URL: "https://git.example/profiles.git", Interval: metav1.Duration{Duration: time.Hour}, Path: "overlays/prod"},
	}
	g.Expect(c.Create(ctx, sync)).To(Succeed())
	sync.Status.Inventory = &v1alpha1.ProfileSyncInventory{}
	for _, h := range holds {
		sync.Status.Inventory.Entries = append(sync.Status.Inventory.Entries, h.InventoryEntry)
	}
	sync.Status.Holds = holds
	g.Expect(c.Status().Update(ctx, sync)).To(Succeed())
	return sync
}

// TestDiffWithTheClusterComparesAHeldObjectAsTheSyncDoes: an overlay that
// leaves a machine image's updateStrategy to the API server's default builds
// what the cluster holds, as the sync sees it (syncplan.AsStored): diff
// --cluster shows no patch of that default, and says what the sync's plan
// does with the hold its ProfileSync's status.holds lists.
func TestDiffWithTheClusterComparesAHeldObjectAsTheSyncDoes(t *testing.T) {
	g := NewWithT(t)
	spec := builders.Profile()
	spec.MachineImages[0].UpdateStrategy = nil
	built := profile.Object{File: "overlays/prod", CloudProfile: &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Spec: *spec}}
	live := built.CloudProfile.DeepCopy()
	live.Spec.MachineImages[0].UpdateStrategy = builders.Strategy(v1alpha1.UpdateStrategyMajor)
	live.Annotations = map[string]string{v1alpha1.HoldUntilAnnotation: "2026-11-25T00:00:00Z"}
	hold := heldOn(v1alpha1.CloudProfileKind, "", "aws", "2026-11-25T00:00:00Z", "spec.machineTypes[0] (m5.large).memory")
	sync := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: "garden", Name: "landscape"}, Status: v1alpha1.ProfileSyncStatus{Holds: []v1alpha1.ObjectHold{hold}}}
	base := &clusterBase{live: &liveProfiles{ctx: context.Background(), reader: fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(sync).WithStatusSubresource(sync).Build()}}

	var stderr strings.Builder
	held, err := base.heldDrift(built, profile.Object{File: liveFile, CloudProfile: live}, builders.Time(diffTime), &stderr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stderr.String()).To(BeEmpty())
	g.Expect(held).NotTo(BeNil())
	g.Expect(string(held.patch)).To(BeEmpty(), "the server's default is no drift")
	g.Expect(held.ending()).To(Equal("The overlay already builds what the cluster holds: the hold ends at the next sync."))
}
