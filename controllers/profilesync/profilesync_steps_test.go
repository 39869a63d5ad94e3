package profilesync

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/syncplan"
	"github.com/profilesync/profilesync/test/builders"
)

// The sync's steps one by one, without an API server, in the style of
// source-controller's reconcileSource tests: each table row is one
// situation and the step's verdict on it.

func stepSync(namespace string) *v1alpha1.ProfileSync {
	return &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Name: "landscape", Namespace: namespace}}
}

func stepCloudProfile(name string, versions ...string) *v1alpha1.CloudProfile {
	cp := &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: builders.WithRequiredLists(v1alpha1.CloudProfileSpec{Type: "local"})}
	for _, v := range versions {
		cp.Spec.Kubernetes.Versions = append(cp.Spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{Version: v})
	}
	return cp
}

func stepNamespaced(namespace, name, parent string, versions ...string) *v1alpha1.NamespacedCloudProfile {
	ncp := &v1alpha1.NamespacedCloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.NamespacedCloudProfileSpec{Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: parent}},
	}
	if len(versions) > 0 {
		ncp.Spec.Kubernetes = &v1alpha1.KubernetesSettings{}
		// An override of a parent version retimes its lifecycle: one that
		// sets nothing is refused, as Gardener refuses it.
		supported := metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
		for _, v := range versions {
			ncp.Spec.Kubernetes.Versions = append(ncp.Spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{Version: v,
				Lifecycle: []v1alpha1.LifecycleStage{{Classification: v1alpha1.ClassificationSupported, StartTime: &supported}}})
		}
	}
	return ncp
}

func gitObject(o client.Object) profile.Object {
	switch typed := o.(type) {
	case *v1alpha1.CloudProfile:
		return profile.Object{File: "profiles.yaml", CloudProfile: typed}
	default:
		return profile.Object{File: "profiles.yaml", NamespacedCloudProfile: typed.(*v1alpha1.NamespacedCloudProfile)}
	}
}

func liveOf(objects ...client.Object) *liveProfiles {
	live := &liveProfiles{
		cloudProfiles: map[string]*v1alpha1.CloudProfile{},
		namespaced:    map[client.ObjectKey]*v1alpha1.NamespacedCloudProfile{},
	}
	for _, o := range objects {
		switch typed := o.(type) {
		case *v1alpha1.CloudProfile:
			live.cloudProfiles[typed.Name] = typed
		case *v1alpha1.NamespacedCloudProfile:
			live.namespaced[client.ObjectKeyFromObject(typed)] = typed
		}
	}
	return live
}

// owned returns o with the owner labels of stepSync(namespace).
func owned[T client.Object](o T, namespace string) T {
	o.SetLabels(ownerLabels(stepSync(namespace)))
	return o
}

// ownerLabels are the owner labels the plan writes for sync.
func ownerLabels(sync *v1alpha1.ProfileSync) map[string]string {
	return syncplan.OwnerLabels(client.ObjectKeyFromObject(sync))
}

// writeOf is the plan's write of o for owner, in stage, executed past the
// plan by the tests of the writes.
func writeOf(t *testing.T, o client.Object, owner *v1alpha1.ProfileSync, stage syncplan.Stage) syncplan.Write {
	t.Helper()
	object := gitObject(o)
	desired, err := syncplan.DesiredObject(object, ownerLabels(owner), "")
	if err != nil {
		t.Fatal(err)
	}
	return syncplan.Write{Entry: syncplan.EntryOf(object), Object: object, Desired: desired, Create: true, Stage: stage}
}

// appliedFrom marks o as the sync leaves an object it applied from the Git
// object from: with the digest of what Git said.
func appliedFrom[T client.Object](o T, from client.Object) T {
	digest, err := profile.ContentDigest(gitObject(from))
	if err != nil {
		panic(err)
	}
	annotations := o.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.AppliedDigestAnnotation] = digest
	o.SetAnnotations(annotations)
	return o
}

// digestsOf is what the sync keeps with a decoded revision: the digest of
// each object.
func digestsOf(t *testing.T, objects []profile.Object) []string {
	t.Helper()
	digests, err := contentDigests(objects)
	if err != nil {
		t.Fatal(err)
	}
	return digests
}

// TestProfileSyncReconciler_prune: the plan's prunes are deleted, each
// reported; one already gone is no error. What is pruned is the plan's
// decision (syncplan's TestOwnership).
func TestProfileSyncReconciler_prune(t *testing.T) {
	const ns = "profilesync-system"
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		prunes     []v1alpha1.InventoryEntry
		cluster    []client.Object
		wantGone   []string
		wantKept   []string
		wantEvents int
	}{
		{
			name:       "what the plan prunes is deleted, and nothing else",
			prunes:     []v1alpha1.InventoryEntry{{Kind: v1alpha1.CloudProfileKind, Name: "old"}},
			cluster:    []client.Object{owned(stepCloudProfile("old"), ns), owned(stepCloudProfile("aws"), ns)},
			wantGone:   []string{"old"},
			wantKept:   []string{"aws"},
			wantEvents: 1,
		},
		{
			name:   "an object already gone is no error",
			prunes: []v1alpha1.InventoryEntry{{Kind: v1alpha1.CloudProfileKind, Name: "old"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.cluster...).Build()
			recorder := record.NewFakeRecorder(10)
			r := &ProfileSyncReconciler{Client: c, EventRecorder: recorder}
			g.Expect(r.prune(context.Background(), stepSync(ns), tt.prunes)).To(Succeed())
			for _, name := range tt.wantGone {
				g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, &v1alpha1.CloudProfile{})).NotTo(Succeed(), name)
			}
			for _, name := range tt.wantKept {
				g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, &v1alpha1.CloudProfile{})).To(Succeed(), name)
			}
			g.Expect(recorder.Events).To(HaveLen(tt.wantEvents))
		})
	}
}

// TestARefusedPlanFailsAsItsKind: a plan refused for tenancy or ownership
// is AccessDenied, one refused by the update rules ValidationFailed; both
// stall until the revision or the cluster changes.
func TestARefusedPlanFailsAsItsKind(t *testing.T) {
	g := NewWithT(t)
	for kind, reason := range map[syncplan.RefusalKind]string{syncplan.AccessDenied: v1alpha1.AccessDeniedReason, syncplan.UpdateRulesBroken: v1alpha1.ValidationFailedReason} {
		err := refusalOf(&syncplan.Refusal{Kind: kind, Problems: []string{"a", "b"}})
		var failed *syncError
		g.Expect(errors.As(err, &failed)).To(BeTrue())
		g.Expect(failed.reason).To(Equal(reason))
		g.Expect(failed.stalled).To(BeTrue())
		g.Expect(err.Error()).To(Equal("a; b"))
	}
}

// TestEveryTopicOfThePlanIsATopicOfItsOwn: the lines of each of the plan's
// event topics are remembered apart, so one topic's lines never hide
// another's.
func TestEveryTopicOfThePlanIsATopicOfItsOwn(t *testing.T) {
	g := NewWithT(t)
	kinds := map[topicKind]bool{}
	for _, topic := range []string{syncplan.TopicHeld, syncplan.TopicRefusedHolds, syncplan.TopicIgnoredHolds, syncplan.TopicDrift} {
		kind, ok := planTopics[topic]
		g.Expect(ok).To(BeTrue(), topic)
		g.Expect(kinds).NotTo(HaveKey(kind), topic)
		kinds[kind] = true
	}
}
