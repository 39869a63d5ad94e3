package profilesync

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/inventory"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/syncplan"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/metricstest"
	"github.com/profilesync/profilesync/test/testenv"
)

// cloudProfileYAML is a CloudProfile of Kubernetes versions, each given as
// the YAML of one entry of spec.kubernetes.versions (without the dash).
func cloudProfileYAML(name string, versions ...string) string {
	doc := "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: " + name + "\nspec:\n  type: local\n" +
		builders.RequiredListsYAML + "  kubernetes:\n    versions:\n"
	for _, v := range versions {
		doc += "    - " + v + "\n"
	}
	return doc
}

// lifecycleYAML is the YAML of a version supported since 2020 that expires
// at expiry.
func lifecycleYAML(version, expiry string) string {
	return "version: " + version + "\n      lifecycle:\n      - {classification: supported, startTime: \"2020-01-01T00:00:00Z\"}\n" +
		"      - {classification: expired, startTime: \"" + expiry + "\"}"
}

// breakGlass is the on-call engineer's kubectl edit of the CloudProfile
// name: edit, and the hold annotations, in one update. Like kubectl edit,
// it reads the object again when a controller wrote it in between (its
// status).
func breakGlass(t *testing.T, name, until, reason string, edit func(*v1alpha1.CloudProfile)) {
	t.Helper()
	annotations := map[string]string{v1alpha1.HoldUntilAnnotation: until}
	if reason != "" {
		annotations[v1alpha1.HoldReasonAnnotation] = reason
	}
	editAnnotated(t, name, annotations, edit)
}

// editAnnotated is breakGlass with any annotations: edit, and annotations
// set, in one update.
func editAnnotated(t *testing.T, name string, annotations map[string]string, edit func(*v1alpha1.CloudProfile)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cp v1alpha1.CloudProfile
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, &cp); err != nil {
			return err
		}
		edit(&cp)
		if cp.Annotations == nil {
			cp.Annotations = map[string]string{}
		}
		for k, v := range annotations {
			cp.Annotations[k] = v
		}
		return k8sClient.Update(context.Background(), &cp)
	})
	if err != nil {
		t.Fatalf("break glass on %s: %v", name, err)
	}
}

// expireIn2021 moves the expiry of the first Kubernetes version to 2021:
// the emergency of the tests.
func expireIn2021(cp *v1alpha1.CloudProfile) {
	cp.Spec.Kubernetes.Versions[0].Lifecycle[1].StartTime = builders.Date("2021-01-01T00:00:00Z")
}

// shrinkMemory changes the memory of the first machine type, a field Git
// sets, to 1Gi.
func shrinkMemory(cp *v1alpha1.CloudProfile) {
	cp.Spec.MachineTypes[0].Memory = resource.MustParse("1Gi")
}

// syncEvents are the messages of the events of sync with reason.
func syncEvents(g Gomega, sync *v1alpha1.ProfileSync, reason string) []string {
	events, err := testenv.Events(context.Background(), k8sClient,
		testenv.EventQuery{Namespace: sync.Namespace, Name: sync.Name, Reason: reason})
	g.Expect(err).NotTo(HaveOccurred())
	return testenv.Messages(events)
}

func versionsOf(cp *v1alpha1.CloudProfile) []string {
	var versions []string
	for _, v := range cp.Spec.Kubernetes.Versions {
		versions = append(versions, v.Version)
	}
	return versions
}

// TestHoldLeavesTheHeldObjectAloneUntilGitCatchesUp: an engineer expires a
// version of one of two profiles by hand and holds it. The status shows the
// expiry at once; a new revision updates the other profile and leaves the
// held one untouched; the pull request that brings the edit into Git
// releases the hold, and the next revision applies normally.
func TestHoldLeavesTheHeldObjectAloneUntilGitCatchesUp(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	held, other := testenv.UniqueName("hold-held"), testenv.UniqueName("hold-other")
	repo := testenv.UniqueName("hold")
	first, err := server.CreateRepo(repo, map[string]string{"profiles.yaml": cloudProfileYAML(held, lifecycleYAML("1.31.0", "2030-01-01T00:00:00Z"), "version: 1.32.0") + "---\n" + cloudProfileYAML(other, "version: 1.31.0")})
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, repo, server.RepoURL(repo), "", held, other)
	waitApplied(t, sync, first)

	until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	breakGlass(t, held, until.Format(time.RFC3339), "1.31.0 breaks the kubelet", expireIn2021)
	requestSync(t, sync, "held")

	t.Run("the ProfileSync shows the hold and records it once", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastHandledReconcileAt).To(Equal("held"))
			g.Expect(conditions.IsTrue(got, v1alpha1.HeldCondition)).To(BeTrue())
			g.Expect(conditions.GetMessage(got, v1alpha1.HeldCondition)).To(And(
				ContainSubstring("CloudProfile/"+held+" held until "+until.Format(time.RFC3339)+": 1.31.0 breaks the kubelet"),
				ContainSubstring("spec.kubernetes.versions[0] (1.31.0).lifecycle[1] (expired).startTime")))
			g.Expect(got.Status.Holds).To(HaveLen(1))
			g.Expect(got.Status.Holds[0].Name).To(Equal(held))
			g.Expect(got.Status.Holds[0].Until.Time).To(BeTemporally("==", until))
			g.Expect(conditions.IsReady(got)).To(BeTrue())
			g.Expect(syncEvents(g, sync, v1alpha1.HoldSetReason)).To(ConsistOf(ContainSubstring("CloudProfile/" + held)))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		g.Expect(syncEvents(g, sync, v1alpha1.DriftCorrectedReason)).To(BeEmpty(), "the edit is not put back")
		// The metrics are recorded just after the status is written.
		g.Eventually(func(g Gomega) {
			g.Expect(gatheredValue(g, "profilesync_held_objects", map[string]string{"namespace": sync.Namespace, "name": sync.Name})).To(Equal(1.0))
			g.Expect(gatheredValue(g, "profilesync_hold_expiry_timestamp_seconds", map[string]string{"namespace": sync.Namespace, "name": sync.Name, "object_name": held})).
				To(Equal(float64(until.Unix())))
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})

	t.Run("the status controller classifies the held object from its live spec", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			g.Expect(builders.KubernetesClassifications(testenv.GetCloudProfile(g, k8sClient, held).Status.ProfileVersionsStatus)).
				To(HaveKeyWithValue("1.31.0", v1alpha1.ClassificationExpired))
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})

	t.Run("a new revision updates every other object and leaves the held one untouched", func(t *testing.T) {
		g := NewWithT(t)
		before := testenv.GetCloudProfile(g, k8sClient, held)
		second, err := server.Commit(repo, map[string]string{"profiles.yaml": cloudProfileYAML(held, lifecycleYAML("1.31.0", "2030-01-01T00:00:00Z"), "version: 1.32.0", "version: 1.33.0") + "---\n" +
			cloudProfileYAML(other, "version: 1.31.0", "version: 1.33.0")}, "add 1.33.0")
		g.Expect(err).NotTo(HaveOccurred())
		requestSync(t, sync, "second")
		waitApplied(t, sync, second)
		g.Expect(versionsOf(testenv.GetCloudProfile(g, k8sClient, other))).To(Equal([]string{"1.31.0", "1.33.0"}))
		after := testenv.GetCloudProfile(g, k8sClient, held)
		g.Expect(after.Spec).To(Equal(before.Spec))
		g.Expect(after.Labels).To(Equal(before.Labels))
		g.Expect(after.Annotations).To(Equal(before.Annotations), "not even the applied digest")
		for _, entry := range after.ManagedFields {
			if entry.Manager == SyncFieldManager {
				g.Expect(entry.Time.Time).To(BeTemporally("<", until.Add(-2*time.Hour).Add(time.Minute)), "no apply since the hold")
			}
		}
		g.Expect(getProfileSync(g, sync).Status.Inventory.Entries).To(ContainElement(v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: held}))
	})

	t.Run("Git catching up releases the hold and the next revision applies normally", func(t *testing.T) {
		g := NewWithT(t)
		caughtUp, err := server.Commit(repo, map[string]string{"profiles.yaml": cloudProfileYAML(held, lifecycleYAML("1.31.0", "2021-01-01T00:00:00Z"), "version: 1.32.0") + "---\n" +
			cloudProfileYAML(other, "version: 1.31.0", "version: 1.33.0")}, "expire 1.31.0, as the emergency did")
		g.Expect(err).NotTo(HaveOccurred())
		requestSync(t, sync, "caught-up")
		waitApplied(t, sync, caughtUp)
		got := getProfileSync(g, sync)
		g.Expect(got.Status.Holds).To(BeEmpty())
		g.Expect(conditions.Has(got, v1alpha1.HeldCondition)).To(BeFalse())
		g.Eventually(func(g Gomega) {
			g.Expect(syncEvents(g, sync, v1alpha1.HoldReleasedReason)).To(ConsistOf(ContainSubstring("CloudProfile/" + held + ": Git caught up")))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		cp := testenv.GetCloudProfile(g, k8sClient, held)
		g.Expect(cp.Annotations).NotTo(HaveKey(v1alpha1.HoldUntilAnnotation))
		g.Expect(cp.Annotations).NotTo(HaveKey(v1alpha1.HoldReasonAnnotation))
		g.Eventually(func(g Gomega) {
			g.Expect(gatheredValue(g, "profilesync_held_objects", map[string]string{"namespace": sync.Namespace, "name": sync.Name})).To(Equal(0.0))
		}).WithTimeout(5 * time.Second).Should(Succeed())

		next, err := server.Commit(repo, map[string]string{"profiles.yaml": cloudProfileYAML(held, lifecycleYAML("1.31.0", "2021-01-01T00:00:00Z"), "version: 1.32.0", "version: 1.33.0") + "---\n" +
			cloudProfileYAML(other, "version: 1.31.0", "version: 1.33.0")}, "add 1.33.0 to the held one too")
		g.Expect(err).NotTo(HaveOccurred())
		requestSync(t, sync, "next")
		waitApplied(t, sync, next)
		g.Expect(versionsOf(testenv.GetCloudProfile(g, k8sClient, held))).To(Equal([]string{"1.31.0", "1.32.0", "1.33.0"}))
	})
}

// TestHoldEndsWhenGitHasTheEditWhateverElseGitChanged: while an emergency
// expiry is held, Git gains another version of the held profile: the hold
// stands and the held object takes nothing. The pull request that brings
// the expiry into Git then releases the hold although Git still differs on
// the other version, which the same sync applies.
func TestHoldEndsWhenGitHasTheEditWhateverElseGitChanged(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	held, repo := testenv.UniqueName("hold-other-field"), testenv.UniqueName("hold-other-field")
	const expiry = "spec.kubernetes.versions[0] (1.31.0).lifecycle[1] (expired).startTime"
	first, err := server.CreateRepo(repo, map[string]string{"profiles.yaml": cloudProfileYAML(held, lifecycleYAML("1.31.0", "2030-01-01T00:00:00Z"), "version: 1.32.0")})
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, repo, server.RepoURL(repo), "", held)
	waitApplied(t, sync, first)
	until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	breakGlass(t, held, until.Format(time.RFC3339), "INC-9", expireIn2021)
	requestSync(t, sync, "held")
	g.Eventually(func(g Gomega) {
		g.Expect(getProfileSync(g, sync).Status.Holds).To(HaveLen(1))
	}).WithTimeout(15 * time.Second).Should(Succeed())

	t.Run("Git changing only another field leaves the hold and the object as they are", func(t *testing.T) {
		g := NewWithT(t)
		before := testenv.GetCloudProfile(g, k8sClient, held)
		other, err := server.Commit(repo, map[string]string{"profiles.yaml": cloudProfileYAML(held, lifecycleYAML("1.31.0", "2030-01-01T00:00:00Z"), "version: 1.32.0", "version: 1.33.0")}, "add 1.33.0")
		g.Expect(err).NotTo(HaveOccurred())
		requestSync(t, sync, "other")
		waitApplied(t, sync, other)
		got := getProfileSync(g, sync)
		g.Expect(got.Status.Holds).To(HaveLen(1))
		g.Expect(got.Status.Holds[0].DriftedFields).To(Equal([]string{expiry}), "what Git changed is not waited on")
		g.Expect(conditions.GetMessage(got, v1alpha1.HeldCondition)).To(ContainSubstring("(differs from Git on " + expiry + ")"))
		after := testenv.GetCloudProfile(g, k8sClient, held)
		g.Expect(after.Spec).To(Equal(before.Spec))
		g.Expect(after.Annotations).To(Equal(before.Annotations))
	})

	t.Run("Git having the edit releases the hold, and Git's other change applies", func(t *testing.T) {
		g := NewWithT(t)
		caughtUp, err := server.Commit(repo, map[string]string{"profiles.yaml": cloudProfileYAML(held, lifecycleYAML("1.31.0", "2021-01-01T00:00:00Z"), "version: 1.32.0", "version: 1.33.0")}, "expire 1.31.0, as the emergency did")
		g.Expect(err).NotTo(HaveOccurred())
		requestSync(t, sync, "caught-up")
		waitApplied(t, sync, caughtUp)
		got := getProfileSync(g, sync)
		g.Expect(got.Status.Holds).To(BeEmpty())
		g.Expect(conditions.Has(got, v1alpha1.HeldCondition)).To(BeFalse())
		cp := testenv.GetCloudProfile(g, k8sClient, held)
		g.Expect(versionsOf(cp)).To(Equal([]string{"1.31.0", "1.32.0", "1.33.0"}))
		g.Expect(cp.Spec.Kubernetes.Versions[0].Lifecycle[1].StartTime.UTC().Format(time.RFC3339)).To(Equal("2021-01-01T00:00:00Z"))
		g.Expect(cp.Annotations).NotTo(HaveKey(v1alpha1.HoldUntilAnnotation))
		g.Expect(cp.Annotations).NotTo(HaveKey(v1alpha1.HoldReasonAnnotation))
		g.Eventually(func(g Gomega) {
			g.Expect(syncEvents(g, sync, v1alpha1.HoldReleasedReason)).To(ConsistOf(ContainSubstring("CloudProfile/" + held + ": Git caught up")))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
}

// TestAHoldChangeSyncsAtOnce: under an interval of an hour, setting a hold
// on a profile of the inventory is judged within seconds (HoldSet, Held; the test allows 30 s, for a loaded CI machine),
// and so is removing it (Git's value back), with no reconcile request.
func TestAHoldChangeSyncsAtOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	l := applyGoodRevision(t, server, "hold-watch")
	g.Expect(l.sync.Spec.Interval.Duration).To(Equal(time.Hour))
	// The hold's change is mapped to its ProfileSync by the manager's index
	// of inventories, which follows the status the sync wrote.
	g.Eventually(func(g Gomega) {
		var owners v1alpha1.ProfileSyncList
		g.Expect(managerClient.List(ctx, &owners, client.MatchingFields{inventory.Index: inventory.Key(v1alpha1.CloudProfileKind, "", l.profile)})).To(Succeed())
		g.Expect(owners.Items).To(HaveLen(1))
		g.Expect(owners.Items[0].Name).To(Equal(l.sync.Name))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	handled := getProfileSync(g, l.sync).Status.LastHandledReconcileAt

	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	breakGlass(t, l.profile, until.Format(time.RFC3339), "INC-10", shrinkMemory)
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, l.sync)
		g.Expect(conditions.IsTrue(got, v1alpha1.HeldCondition)).To(BeTrue())
		g.Expect(got.Status.Holds).To(HaveLen(1))
		g.Expect(syncEvents(g, l.sync, v1alpha1.HoldSetReason)).To(ConsistOf(ContainSubstring("CloudProfile/" + l.profile + " held until " + until.Format(time.RFC3339))))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(getProfileSync(g, l.sync).Status.LastHandledReconcileAt).To(Equal(handled), "no reconcile was requested")

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cp := testenv.GetCloudProfile(g, k8sClient, l.profile)
		delete(cp.Annotations, v1alpha1.HoldUntilAnnotation)
		delete(cp.Annotations, v1alpha1.HoldReasonAnnotation)
		return k8sClient.Update(ctx, cp)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(testenv.GetCloudProfile(g, k8sClient, l.profile).Spec.MachineTypes[0].Memory.String()).To(Equal("8Gi"), "the hold ended by hand, Git's value is back")
		got := getProfileSync(g, l.sync)
		g.Expect(got.Status.Holds).To(BeEmpty())
		g.Expect(conditions.Has(got, v1alpha1.HeldCondition)).To(BeFalse())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(getProfileSync(g, l.sync).Status.LastHandledReconcileAt).To(Equal(handled), "no reconcile was requested")
}

// TestHoldChangedPassesOnlyChangesOfTheHoldAnnotations: the watch on
// profiles wakes a ProfileSync only for a hold's change, not for the
// sync's own writes, status writes or drift.
func TestHoldChangedPassesOnlyChangesOfTheHoldAnnotations(t *testing.T) {
	annotated := func(annotations map[string]string) *v1alpha1.CloudProfile {
		cp := stepCloudProfile("aws", "1.31.0")
		cp.Annotations = annotations
		return cp
	}
	held := map[string]string{v1alpha1.HoldUntilAnnotation: "2030-01-01T00:00:00Z", v1alpha1.HoldReasonAnnotation: "INC-1", "team": "a"}
	with := func(key, value string) map[string]string {
		annotations := maps.Clone(held)
		if value == "" {
			delete(annotations, key)
		} else {
			annotations[key] = value
		}
		return annotations
	}
	for _, tt := range []struct {
		name     string
		old, new map[string]string
		want     bool
	}{
		{"a hold set", map[string]string{"team": "a"}, held, true},
		{"a hold extended", held, with(v1alpha1.HoldUntilAnnotation, "2030-01-02T00:00:00Z"), true},
		{"a reason changed", held, with(v1alpha1.HoldReasonAnnotation, "INC-2"), true},
		{"a hold removed", held, map[string]string{"team": "a"}, true},
		{"another annotation", held, with("team", "b"), false},
		{"nothing of the annotations", held, held, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := inventory.HoldChanged.Update(event.UpdateEvent{ObjectOld: annotated(tt.old), ObjectNew: annotated(tt.new)})
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	g.Expect(inventory.HoldChanged.Create(event.CreateEvent{Object: annotated(held)})).To(BeTrue(), "a held profile seen first")
	g.Expect(inventory.HoldChanged.Create(event.CreateEvent{Object: annotated(nil)})).To(BeFalse())
	g.Expect(inventory.HoldChanged.Delete(event.DeleteEvent{Object: annotated(held)})).To(BeFalse())
}

// TestHoldExpiresExactlyAtItsExpiry: the sync asks to run again exactly at
// the hold's expiry, on its clock, and the run then puts Git back and
// removes the hold.
func TestHoldExpiresExactlyAtItsExpiry(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Second)
	testClock.Set(t, start)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	l := applyGoodRevision(t, server, "hold-expiry")
	until := start.Add(30 * time.Minute)
	breakGlass(t, l.profile, until.Format(time.RFC3339), "", shrinkMemory)
	requestSync(t, l.sync, "held")
	g.Eventually(func(g Gomega) {
		g.Expect(getProfileSync(g, l.sync).Status.Holds).To(HaveLen(1))
	}).WithTimeout(15 * time.Second).Should(Succeed())

	r, events := directSyncReconciler(t)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(l.sync)}
	result, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.RequeueAfter).To(Equal(30*time.Minute), "woken exactly at the expiry, sooner than the hour's interval")
	g.Expect(testenv.GetCloudProfile(g, k8sClient, l.profile).Spec.MachineTypes[0].Memory.String()).To(Equal("1Gi"), "still held")

	testClock.Set(t, until)
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	cp := testenv.GetCloudProfile(g, k8sClient, l.profile)
	g.Expect(cp.Spec.MachineTypes[0].Memory.String()).To(Equal("8Gi"), "Git's value is back")
	g.Expect(cp.Annotations).NotTo(HaveKey(v1alpha1.HoldUntilAnnotation))
	got := getProfileSync(g, l.sync)
	g.Expect(got.Status.Holds).To(BeEmpty())
	g.Expect(conditions.Has(got, v1alpha1.HeldCondition)).To(BeFalse())
	g.Expect(testenv.DrainEvents(events)).To(ContainElement(ContainSubstring("HoldExpired CloudProfile/" + l.profile + ": the hold expired at " + until.Format(time.RFC3339))))
}

// TestHoldRefusedOrIgnored: a hold the sync cannot honour is reported with
// the annotation's name and reason and the object synced as if not held; a
// hold on an object the ProfileSync does not own is ignored with a warning.
func TestHoldRefusedOrIgnored(t *testing.T) {
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	until := func(value string) map[string]string { return map[string]string{v1alpha1.HoldUntilAnnotation: value} }
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{"an expiry that is not a time", until("tomorrow"), `annotation profilesync.io/hold-until: "tomorrow" is not an RFC 3339 time`},
		{"an expiry beyond --max-hold", until(time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339)), "(the manager's --max-hold)"},
		{"an expiry in the past", until("2020-01-01T00:00:00Z"), "annotation profilesync.io/hold-until: 2020-01-01T00:00:00Z is not in the future"},
		{"a reason without an expiry", map[string]string{v1alpha1.HoldReasonAnnotation: "INC-1"},
			"annotation profilesync.io/hold-reason is set without profilesync.io/hold-until, so nothing is held"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			l := applyGoodRevision(t, server, "hold-refused")
			editAnnotated(t, l.profile, tt.annotations, shrinkMemory)
			requestSync(t, l.sync, "refused")
			g.Eventually(func(g Gomega) {
				got := getProfileSync(g, l.sync)
				g.Expect(conditions.IsFalse(got, v1alpha1.HeldCondition)).To(BeTrue())
				g.Expect(conditions.GetReason(got, v1alpha1.HeldCondition)).To(Equal(v1alpha1.HoldRefusedReason))
				g.Expect(conditions.GetMessage(got, v1alpha1.HeldCondition)).To(And(ContainSubstring("CloudProfile/"+l.profile), ContainSubstring(tt.want)))
				g.Expect(got.Status.Holds).To(BeEmpty())
				g.Expect(testenv.GetCloudProfile(g, k8sClient, l.profile).Spec.MachineTypes[0].Memory.String()).To(Equal("8Gi"), "synced as if not held")
				g.Expect(syncEvents(g, l.sync, v1alpha1.HoldRefusedReason)).To(ConsistOf(ContainSubstring(tt.want)))
				g.Expect(metricstest.Value(g, testMetrics, "profilesync_refused_holds", map[string]string{"namespace": l.sync.Namespace, "name": l.sync.Name})).
					To(Equal(1.0), "the alert ProfileHoldRefused reads it")
			}).WithTimeout(15 * time.Second).Should(Succeed())
			for k, v := range tt.annotations {
				g.Expect(testenv.GetCloudProfile(g, k8sClient, l.profile).Annotations).To(HaveKeyWithValue(k, v), "a refused hold is not the sync's to remove")
			}
		})
	}

	t.Run("a hold on an object the ProfileSync does not own", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		name, repo := testenv.UniqueName("hold-unowned"), testenv.UniqueName("hold-unowned")
		handMade := &v1alpha1.CloudProfile{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
				v1alpha1.HoldUntilAnnotation: time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
			}},
			Spec: builders.WithRequiredLists(v1alpha1.CloudProfileSpec{Type: "local", Kubernetes: v1alpha1.KubernetesSettings{
				Versions: []v1alpha1.ExpirableVersion{{Version: "1.30.0"}},
			}}),
		}
		g.Expect(k8sClient.Create(ctx, handMade)).To(Succeed())
		commit, err := server.CreateRepo(repo, singleProfileRepo(name, "1.31.0"))
		g.Expect(err).NotTo(HaveOccurred())
		sync := createLandscapeSync(t, repo, server.RepoURL(repo), "", name)
		waitApplied(t, sync, commit)
		g.Expect(versionsOf(testenv.GetCloudProfile(g, k8sClient, name))).To(ContainElement("1.31.0"), "the hold is ignored")
		g.Expect(conditions.Has(getProfileSync(g, sync), v1alpha1.HeldCondition)).To(BeFalse())
		g.Expect(metricstest.Value(g, testMetrics, "profilesync_refused_holds", map[string]string{"namespace": sync.Namespace, "name": sync.Name})).
			To(Equal(0.0), "ignored, not refused")
		g.Eventually(func(g Gomega) {
			g.Expect(syncEvents(g, sync, v1alpha1.HoldIgnoredReason)).To(ConsistOf(ContainSubstring("CloudProfile/" + name + ": annotation profilesync.io/hold-until ignored")))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
}

// TestDriftWarnModeWritesNothingAndNamesTheFields: under mode warn a hand
// edit is reported (event, condition, metric) and left; a new revision
// still applies whole.
func TestDriftWarnModeWritesNothingAndNamesTheFields(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	l := applyGoodRevision(t, server, "drift-warn")
	testenv.UpdateSpec(t, k8sClient, l.sync.DeepCopy(), func(ps *v1alpha1.ProfileSync) {
		ps.Spec.DriftDetection = &v1alpha1.DriftDetection{Mode: v1alpha1.DriftDetectionWarn}
	})
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, l.sync)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}).WithTimeout(15 * time.Second).Should(Succeed())

	testenv.UpdateSpec(t, k8sClient, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: l.profile}}, shrinkMemory)
	syncEntry := func(cp *v1alpha1.CloudProfile) metav1.ManagedFieldsEntry {
		for _, entry := range cp.ManagedFields {
			if entry.Manager == SyncFieldManager {
				return entry
			}
		}
		return metav1.ManagedFieldsEntry{}
	}
	edited := testenv.GetCloudProfile(g, k8sClient, l.profile)
	requestSync(t, l.sync, "drifted")
	const field = "spec.machineTypes[0] (m5.large).memory"
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, l.sync)
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal("drifted"))
		g.Expect(conditions.IsTrue(got, v1alpha1.DriftedCondition)).To(BeTrue())
		g.Expect(conditions.GetMessage(got, v1alpha1.DriftedCondition)).To(ContainSubstring("CloudProfile/" + l.profile + ": " + field))
		g.Expect(syncEvents(g, l.sync, v1alpha1.DriftDetectedReason)).To(ConsistOf(ContainSubstring("CloudProfile/" + l.profile + ": " + field + " changed on the cluster; left as it is")))
	}).WithTimeout(15 * time.Second).Should(Succeed())
	cp := testenv.GetCloudProfile(g, k8sClient, l.profile)
	g.Expect(cp.Spec.MachineTypes[0].Memory.String()).To(Equal("1Gi"))
	g.Expect(syncEntry(cp)).To(Equal(syncEntry(edited)), "the sync wrote nothing")
	g.Expect(cp.Annotations).To(Equal(edited.Annotations))
	g.Expect(syncEvents(g, l.sync, v1alpha1.DriftCorrectedReason)).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		g.Expect(gatheredValue(g, "profilesync_drifted_objects", map[string]string{"namespace": l.sync.Namespace, "name": l.sync.Name})).To(Equal(1.0))
	}).WithTimeout(5 * time.Second).Should(Succeed())

	second, err := server.Commit(l.repo, singleProfileRepo(l.profile, "1.32.0"), "move to 1.32.0")
	g.Expect(err).NotTo(HaveOccurred())
	requestSync(t, l.sync, "second")
	waitApplied(t, l.sync, second)
	cp = testenv.GetCloudProfile(g, k8sClient, l.profile)
	g.Expect(cp.Spec.MachineTypes[0].Memory.String()).To(Equal("8Gi"), "a new revision applies whole")
	g.Expect(versionsOf(cp)).To(Equal([]string{"1.32.0"}))
	g.Expect(conditions.Has(getProfileSync(g, l.sync), v1alpha1.DriftedCondition)).To(BeFalse())
}

// gatheredValue is the value of the series of the suite's metric name with
// labels.
func gatheredValue(g Gomega, name string, labels map[string]string) float64 {
	families, err := testMetrics.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue series
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	g.Expect(false).To(BeTrue(), "no series %s%v", name, labels)
	return 0
}

func TestHoldRequeueIsTheEarliestExpiryWithinTheInterval(t *testing.T) {
	now := builders.Time("2026-11-25T02:00:00Z")
	holds := func(untils ...string) *v1alpha1.ProfileSync {
		obj := &v1alpha1.ProfileSync{}
		for _, u := range untils {
			obj.Status.Holds = append(obj.Status.Holds, v1alpha1.ObjectHold{Until: metav1.NewTime(builders.Time(u))})
		}
		return obj
	}
	for _, tt := range []struct {
		name string
		obj  *v1alpha1.ProfileSync
		want time.Duration
	}{
		{"nothing held waits the interval", holds(), time.Hour},
		{"the earliest expiry within the interval", holds("2026-11-25T02:40:00Z", "2026-11-25T02:10:00Z"), 10 * time.Minute},
		{"an expiry after the interval waits the interval", holds("2026-11-26T00:00:00Z"), time.Hour},
		{"an expiry already past is the next sync's, not a hot loop", holds("2026-11-25T01:00:00Z"), time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(syncRequeue(tt.obj, now, time.Hour)).To(Equal(tt.want))
		})
	}
}

// TestEndHoldRemovesOnlyTheHoldItJudged: the JSON patch that ends a hold
// tests the value judged, so a hold extended meanwhile stays.
func TestEndHoldRemovesOnlyTheHoldItJudged(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp := stepCloudProfile(testenv.UniqueName("end-hold"), "1.31.0")
	cp.Annotations = map[string]string{v1alpha1.HoldUntilAnnotation: "2030-01-02T00:00:00Z", v1alpha1.HoldReasonAnnotation: "why", "team": "a"}
	g.Expect(k8sClient.Create(ctx, cp)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, cp) })
	r := &ProfileSyncReconciler{Client: k8sClient}

	entry := v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: cp.Name}
	err := r.endHold(ctx, syncplan.Release{Entry: entry, Until: "2030-01-01T00:00:00Z", HasReason: true}, cp)
	g.Expect(err).To(MatchError(ContainSubstring("end the hold of CloudProfile/" + cp.Name)))
	g.Expect(testenv.GetCloudProfile(g, k8sClient, cp.Name).Annotations).To(HaveKey(v1alpha1.HoldUntilAnnotation), "extended meanwhile: left")

	g.Expect(r.endHold(ctx, syncplan.Release{Entry: entry, Until: "2030-01-02T00:00:00Z", HasReason: true}, cp)).To(Succeed())
	g.Expect(testenv.GetCloudProfile(g, k8sClient, cp.Name).Annotations).To(Equal(map[string]string{"team": "a"}))
}

// TestHoldSetIsReportedOnce: a sync that follows another at once may read
// the ProfileSync from the cache without the other's status; it does not
// report the hold again. A restarted manager, which remembers nothing,
// reads the hold from the status and does not report it either.
func TestHoldSetIsReportedOnce(t *testing.T) {
	g := NewWithT(t)
	now := builders.Time("2026-11-25T02:00:00Z")
	owner := stepSync(clusterProfilesNamespace)
	owner.Status.Inventory = &v1alpha1.ProfileSyncInventory{Entries: []v1alpha1.InventoryEntry{{Kind: v1alpha1.CloudProfileKind, Name: "aws"}}}
	git := stepCloudProfile("aws", "1.31.0")
	live := appliedFrom(owned(git.DeepCopy(), owner.Namespace), git)
	live.Annotations[v1alpha1.HoldUntilAnnotation] = now.Add(time.Hour).Format(time.RFC3339)
	shrinkMemory(live)
	objects := []profile.Object{gitObject(git)}
	// sync plans a sync of obj and reports the plan, as r.
	sync := func(r *ProfileSyncReconciler, obj *v1alpha1.ProfileSync) {
		plan, err := syncplan.Decide(syncplan.Input{
			Sync: client.ObjectKeyFromObject(obj), Objects: objects, Digests: digestsOf(t, objects),
			Live:      syncplan.Live{CloudProfiles: liveOf(live).cloudProfiles},
			Inventory: obj.Status.Inventory.Entries, PreviousHolds: obj.Status.Holds, Now: now,
			LandscapeNamespace: clusterProfilesNamespace,
		})
		g.Expect(err).NotTo(HaveOccurred())
		r.reportPlan(obj, plan)
	}
	newManager := func() (*ProfileSyncReconciler, *record.FakeRecorder) {
		recorder := record.NewFakeRecorder(10)
		return &ProfileSyncReconciler{EventRecorder: recorder, Clock: clocktesting.NewFakePassiveClock(now)}, recorder
	}

	r, events := newManager()
	first := owner.DeepCopy()
	sync(r, first)
	g.Expect(first.Status.Holds).To(HaveLen(1))
	sync(r, owner.DeepCopy())
	g.Expect(testenv.DrainEvents(events)).To(ConsistOf(HavePrefix("Normal " + v1alpha1.HoldSetReason + " CloudProfile/aws held until")))

	restarted, events := newManager()
	sync(restarted, first.DeepCopy())
	g.Expect(testenv.DrainEvents(events)).To(BeEmpty())
}

// TestAHoldHoldsTheEditInEitherOrder: the on-call engineer sets the hold
// before the edit, after it, or with it in one write; in each order the
// manager keeps the edit (999Gi, not Git's 8Gi), records its field under
// the hold and does not release it. A hold set before the edit, judged at
// once with nothing drifted yet, stays instead of taking "nothing drifted"
// for "Git caught up".
func TestAHoldHoldsTheEditInEitherOrder(t *testing.T) {
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	const memory = "spec.machineTypes[0] (m5.large).memory"
	toHugeMemory := func(cp *v1alpha1.CloudProfile) { cp.Spec.MachineTypes[0].Memory = resource.MustParse("999Gi") }
	untouched := func(*v1alpha1.CloudProfile) {}
	// landscape is a ProfileSync that applied one profile and whose
	// inventory the manager's index already lists, so a hold's change
	// syncs it at once.
	landscape := func(t *testing.T, prefix string) appliedLandscape {
		l := applyGoodRevision(t, server, prefix)
		NewWithT(t).Eventually(func(g Gomega) {
			var owners v1alpha1.ProfileSyncList
			g.Expect(managerClient.List(context.Background(), &owners, client.MatchingFields{inventory.Index: inventory.Key(v1alpha1.CloudProfileKind, "", l.profile)})).To(Succeed())
			g.Expect(owners.Items).To(HaveLen(1))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		return l
	}
	holdAnnotations := func(until time.Time) map[string]string {
		return map[string]string{v1alpha1.HoldUntilAnnotation: until.Format(time.RFC3339), v1alpha1.HoldReasonAnnotation: "INC-32"}
	}
	// expectEditHeld checks, for several seconds and across a requested
	// sync, that the edit stands under the hold with its field recorded.
	expectEditHeld := func(t *testing.T, l appliedLandscape, until time.Time) {
		g := NewWithT(t)
		requestSync(t, l.sync, "after-the-edit")
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, l.sync)
			g.Expect(got.Status.LastHandledReconcileAt).To(Equal("after-the-edit"))
			g.Expect(got.Status.Holds).To(HaveLen(1))
			g.Expect(got.Status.Holds[0].DriftedFields).To(Equal([]string{memory}))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		g.Consistently(func(g Gomega) {
			cp := testenv.GetCloudProfile(g, k8sClient, l.profile)
			g.Expect(cp.Spec.MachineTypes[0].Memory.String()).To(Equal("999Gi"), "the edit is not put back")
			g.Expect(cp.Annotations).To(HaveKeyWithValue(v1alpha1.HoldUntilAnnotation, until.Format(time.RFC3339)))
			g.Expect(syncEvents(g, l.sync, v1alpha1.HoldReleasedReason)).To(BeEmpty())
			g.Expect(syncEvents(g, l.sync, v1alpha1.DriftCorrectedReason)).To(BeEmpty())
		}).WithTimeout(4 * time.Second).Should(Succeed())
	}

	t.Run("hold first, then the edit", func(t *testing.T) {
		g := NewWithT(t)
		l := landscape(t, "hold-first")
		until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
		editAnnotated(t, l.profile, holdAnnotations(until), untouched)
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, l.sync)
			g.Expect(conditions.IsTrue(got, v1alpha1.HeldCondition)).To(BeTrue())
			g.Expect(conditions.GetMessage(got, v1alpha1.HeldCondition)).To(ContainSubstring("nothing drifted yet"))
			g.Expect(got.Status.Holds).To(HaveLen(1))
			g.Expect(got.Status.Holds[0].DriftedFields).To(BeEmpty())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(testenv.GetCloudProfile(g, k8sClient, l.profile).Annotations).To(HaveKey(v1alpha1.HoldUntilAnnotation), "the hold does not release itself")
			g.Expect(syncEvents(g, l.sync, v1alpha1.HoldReleasedReason)).To(BeEmpty())
		}).WithTimeout(4 * time.Second).Should(Succeed())

		editAnnotated(t, l.profile, nil, toHugeMemory)
		expectEditHeld(t, l, until)
	})
	t.Run("the edit first, then the hold", func(t *testing.T) {
		l := landscape(t, "edit-first")
		until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
		editAnnotated(t, l.profile, nil, toHugeMemory)
		editAnnotated(t, l.profile, holdAnnotations(until), untouched)
		expectEditHeld(t, l, until)
	})
	t.Run("the edit and the hold in one write", func(t *testing.T) {
		l := landscape(t, "edit-and-hold")
		until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
		editAnnotated(t, l.profile, holdAnnotations(until), toHugeMemory)
		expectEditHeld(t, l, until)
	})
}

// TestHeldUntilShowsOnlyAHoldTheSyncHonours: kubectl get's Held Until
// column (read here as kubectl reads it, through the API server's table)
// stays empty for a hold the sync refuses (further ahead than --max-hold),
// shows the expiry of one it honours, and empties again when the hold is
// removed.
func TestHeldUntilShowsOnlyAHoldTheSyncHonours(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	l := applyGoodRevision(t, server, "held-until")

	tooLong := time.Now().Add(v1alpha1.DefaultMaxHold + time.Hour).UTC().Truncate(time.Second)
	breakGlass(t, l.profile, tooLong.Format(time.RFC3339), "INC-32: longer than --max-hold", shrinkMemory)
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, l.sync)
		g.Expect(conditions.IsFalse(got, v1alpha1.HeldCondition)).To(BeTrue())
		g.Expect(conditions.GetReason(got, v1alpha1.HeldCondition)).To(Equal(v1alpha1.HoldRefusedReason))
		g.Expect(testenv.GetCloudProfile(g, k8sClient, l.profile).Spec.MachineTypes[0].Memory.String()).To(Equal("8Gi"), "the sync put the edit back")
	}).WithTimeout(15 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(heldUntilColumn(g, l.profile)).To(BeEmpty(), "a refused hold never reads as held")
		g.Expect(testenv.GetCloudProfile(g, k8sClient, l.profile).Status.HeldUntil).To(BeNil())
	}).WithTimeout(3 * time.Second).Should(Succeed())

	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	breakGlass(t, l.profile, until.Format(time.RFC3339), "INC-32", shrinkMemory)
	g.Eventually(func(g Gomega) {
		g.Expect(getProfileSync(g, l.sync).Status.Holds).To(HaveLen(1))
		g.Expect(heldUntilColumn(g, l.profile)).To(Equal(until.Format(time.RFC3339)))
	}).WithTimeout(15 * time.Second).Should(Succeed())

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cp := testenv.GetCloudProfile(g, k8sClient, l.profile)
		delete(cp.Annotations, v1alpha1.HoldUntilAnnotation)
		delete(cp.Annotations, v1alpha1.HoldReasonAnnotation)
		return k8sClient.Update(ctx, cp)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(heldUntilColumn(g, l.profile)).To(BeEmpty())
	}).WithTimeout(15 * time.Second).Should(Succeed())
}

// heldUntilColumn is the Held Until cell of the CloudProfile name as
// kubectl get prints it: the API server's table of the CRD's printer
// columns; empty when the cell is.
func heldUntilColumn(g Gomega, name string) string {
	httpClient, err := rest.HTTPClientFor(restConfig)
	g.Expect(err).NotTo(HaveOccurred())
	request, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(restConfig.Host, "/")+"/apis/core.profilesync.io/v1alpha1/cloudprofiles/"+name, nil)
	g.Expect(err).NotTo(HaveOccurred())
	request.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	response, err := httpClient.Do(request)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = response.Body.Close() }()
	if response.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(response.Body)
		g.Expect(response.StatusCode).To(Equal(http.StatusOK), "GET %s: %s", request.URL, body)
	}
	var table metav1.Table
	g.Expect(json.NewDecoder(response.Body).Decode(&table)).To(Succeed())
	g.Expect(table.Rows).To(HaveLen(1))
	for i, column := range table.ColumnDefinitions {
		if column.Name == "Held Until" {
			cell, _ := table.Rows[0].Cells[i].(string)
			return cell
		}
	}
	g.Expect(table.ColumnDefinitions).To(ContainElement(HaveField("Name", "Held Until")))
	return ""
}
