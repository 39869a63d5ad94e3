package webhooks

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

// testMaxHold is the suite's --max-hold: shorter than the default, so a test
// sees that the option, not v1alpha1.DefaultMaxHold, bounds a hold.
const testMaxHold = 48 * time.Hour

// holdUntil is a hold-until value d after the webhooks' clock.
func holdUntil(d time.Duration) string {
	return webhookClock.Now().Add(d).UTC().Format(time.RFC3339)
}

// onCall is a user holding the sample on-call role (config/rbac) in every
// namespace: edit rights and the verb hold.
func onCall(t *testing.T) (client.Client, string) {
	t.Helper()
	roles := createClusterRoles(t, "role_on_call.yaml", "-"+uniqueName("test"))
	user := uniqueName("on-call")
	bindClusterWide(t, roles[0], userSubject(user))
	return clientAs(t, user, "on-call"), user
}

// landscapeOperatorNamed is landscapeOperator, with the user's name: may
// edit every profile, custom verbs included, but does not hold the verb hold.
func landscapeOperatorNamed(t *testing.T) (client.Client, string) {
	t.Helper()
	roles := createClusterRoles(t, "role_landscape_operator.yaml", "-"+uniqueName("test"))
	user := uniqueName("landscape-operator")
	bindClusterWide(t, roles[0], userSubject(user))
	return clientAs(t, user, "landscape-operators"), user
}

// updateCloudProfileAs re-reads cp as c sees it, applies mutate and updates it
// as c.
func updateCloudProfileAs(c client.Client, cp *v1alpha1.CloudProfile, mutate func(*v1alpha1.CloudProfile)) error {
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
		return err
	}
	mutate(cp)
	return c.Update(ctx, cp)
}

// setAnnotation sets or, for remove, deletes key on obj.
func setAnnotation(obj client.Object, key, value string, remove bool) {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	if remove {
		delete(annotations, key)
	} else {
		annotations[key] = value
	}
	obj.SetAnnotations(annotations)
}

func expectHoldForbidden(g Gomega, err error, resource, name, user, key string) {
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(resource + ` "` + name + `" is forbidden`))
	g.Expect(err.Error()).To(ContainSubstring(`metadata.annotations[` + key + `]: Forbidden: user "` + user +
		`" may not set, change or remove the hold annotation ` + key))
	g.Expect(err.Error()).To(ContainSubstring(`needs the verb "hold" on ` + resource))
}

func TestHoldingACloudProfileNeedsTheHoldVerbNotJustEditRights(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp := newParent(t)
	editor, editorName := landscapeOperatorNamed(t)
	oncall, _ := onCall(t)
	const resource = "cloudprofiles.core.profilesync.io"

	// Setting a hold.
	err := updateCloudProfileAs(editor, cp, func(cp *v1alpha1.CloudProfile) {
		setAnnotation(cp, v1alpha1.HoldUntilAnnotation, holdUntil(time.Hour), false)
		setAnnotation(cp, v1alpha1.HoldReasonAnnotation, "INC-1: gardenlinux 1592.1.0 is broken", false)
	})
	expectHoldForbidden(g, err, resource, cp.Name, editorName, v1alpha1.HoldUntilAnnotation)
	expectHoldForbidden(g, err, resource, cp.Name, editorName, v1alpha1.HoldReasonAnnotation)
	g.Expect(updateCloudProfileAs(editor, cp, func(cp *v1alpha1.CloudProfile) {
		setAnnotation(cp, v1alpha1.HoldReasonAnnotation, "only a reason", false)
	})).To(MatchError(ContainSubstring(`the hold annotation `+v1alpha1.HoldReasonAnnotation)), "a reason alone is a hold annotation too")

	g.Expect(updateCloudProfileAs(oncall, cp, func(cp *v1alpha1.CloudProfile) {
		setAnnotation(cp, v1alpha1.HoldUntilAnnotation, holdUntil(time.Hour), false)
		setAnnotation(cp, v1alpha1.HoldReasonAnnotation, "INC-1: gardenlinux 1592.1.0 is broken", false)
		cp.Spec.MachineImages[0].Versions[0].Lifecycle = []v1alpha1.LifecycleStage{{Classification: v1alpha1.ClassificationSupported},
			{Classification: v1alpha1.ClassificationExpired, StartTime: builders.Date("2025-06-01T00:00:00Z")}}
	})).To(Succeed(), "the on-call engineer breaks glass: the emergency edit and its hold in one update")

	// Edits that leave the hold alone need no verb.
	g.Expect(updateCloudProfileAs(editor, cp, func(cp *v1alpha1.CloudProfile) {
		setAnnotation(cp, "example.com/ticket", "INC-1", false)
		cp.Spec.Regions = append(cp.Spec.Regions, v1alpha1.Region{Name: "eu-2"})
	})).To(Succeed())

	// Changing and removing it.
	err = updateCloudProfileAs(editor, cp, func(cp *v1alpha1.CloudProfile) {
		setAnnotation(cp, v1alpha1.HoldUntilAnnotation, holdUntil(2*time.Hour), false)
	})
	expectHoldForbidden(g, err, resource, cp.Name, editorName, v1alpha1.HoldUntilAnnotation)
	err = updateCloudProfileAs(editor, cp, func(cp *v1alpha1.CloudProfile) {
		setAnnotation(cp, v1alpha1.HoldUntilAnnotation, "", true)
		setAnnotation(cp, v1alpha1.HoldReasonAnnotation, "", true)
	})
	expectHoldForbidden(g, err, resource, cp.Name, editorName, v1alpha1.HoldUntilAnnotation)
	g.Expect(updateCloudProfileAs(oncall, cp, func(cp *v1alpha1.CloudProfile) {
		setAnnotation(cp, v1alpha1.HoldUntilAnnotation, holdUntil(2*time.Hour), false)
	})).To(Succeed())
	g.Expect(updateCloudProfileAs(oncall, cp, func(cp *v1alpha1.CloudProfile) {
		setAnnotation(cp, v1alpha1.HoldUntilAnnotation, "", true)
		setAnnotation(cp, v1alpha1.HoldReasonAnnotation, "", true)
	})).To(Succeed())

	live := &v1alpha1.CloudProfile{}
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(cp), live)).To(Succeed())
	g.Expect(live.Annotations).To(Equal(map[string]string{"example.com/ticket": "INC-1"}))
	g.Expect(live.Spec.Regions).To(HaveLen(2))
}

func TestCreatingACloudProfileWithAHoldNeedsTheHoldVerb(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	editor, editorName := landscapeOperatorNamed(t)
	oncallRoles := createClusterRoles(t, "role_on_call.yaml", "-"+uniqueName("test"))
	bindClusterWide(t, oncallRoles[0], userSubject(editorName))

	held := func() *v1alpha1.CloudProfile {
		cp := &v1alpha1.CloudProfile{}
		cp.Name = uniqueName("held")
		cp.Spec = v1alpha1.CloudProfileSpec{Type: "local", Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{{Version: "1.31.0"}}},
			MachineTypes: []v1alpha1.MachineType{machineType("m5.large", "2", "8Gi")}, Regions: []v1alpha1.Region{{Name: "eu-1"}}}
		cp.Annotations = map[string]string{v1alpha1.HoldUntilAnnotation: holdUntil(time.Hour)}
		return cp
	}
	cp := held()
	g.Expect(editor.Create(ctx, cp)).To(Succeed(), "create from the landscape operator role, hold from the on-call role")

	without, withoutName := landscapeOperatorNamed(t)
	cp = held()
	err := without.Create(ctx, cp)
	expectHoldForbidden(g, err, "cloudprofiles.core.profilesync.io", cp.Name, withoutName, v1alpha1.HoldUntilAnnotation)
	cp.Annotations = nil
	g.Expect(without.Create(ctx, cp)).To(Succeed(), "without the hold the same user creates it")
}

func TestHoldingANamespacedCloudProfileNeedsTheHoldVerbInItsNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace, other := newNamespace(t), newNamespace(t)
	parent := newParent(t)
	ncp := namespacedProfile(namespace, parent.Name)
	g.Expect(adminClient.Create(ctx, ncp)).To(Succeed())
	editor, editorName := landscapeOperatorNamed(t)
	const resource = "namespacedcloudprofiles.core.profilesync.io"

	err := updateAs(editor, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		setAnnotation(ncp, v1alpha1.HoldUntilAnnotation, holdUntil(time.Hour), false)
		ncp.Spec.MachineImages = machineImagesOverride("2025-06-01T00:00:00Z")
	})
	expectHoldForbidden(g, err, resource, ncp.Name, editorName, v1alpha1.HoldUntilAnnotation)
	g.Expect(err.Error()).To(ContainSubstring(`of NamespacedCloudProfiles in namespace "` + namespace + `"`))

	// The verb in another namespace grants nothing here.
	roles := createClusterRoles(t, "role_on_call.yaml", "-"+uniqueName("test"))
	bindInNamespace(t, other, roles[0], userSubject(editorName))
	err = updateAs(editor, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		setAnnotation(ncp, v1alpha1.HoldUntilAnnotation, holdUntil(time.Hour), false)
	})
	expectHoldForbidden(g, err, resource, ncp.Name, editorName, v1alpha1.HoldUntilAnnotation)

	bindInNamespace(t, namespace, roles[0], userSubject(editorName))
	g.Expect(updateAs(editor, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		setAnnotation(ncp, v1alpha1.HoldUntilAnnotation, holdUntil(time.Hour), false)
		setAnnotation(ncp, v1alpha1.HoldReasonAnnotation, "INC-2", false)
		ncp.Spec.MachineImages = machineImagesOverride("2025-06-01T00:00:00Z")
	})).To(Succeed())

	// Another editor without the verb: unrelated edits pass, the hold does not.
	other2, other2Name := landscapeOperatorNamed(t)
	g.Expect(updateAs(other2, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Labels = map[string]string{"team": "a"}
		ncp.Spec.MachineTypes = append(ncp.Spec.MachineTypes, machineType("m5.8xlarge", "32", "128Gi"))
	})).To(Succeed())
	err = updateAs(other2, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		setAnnotation(ncp, v1alpha1.HoldReasonAnnotation, "INC-3", false)
	})
	expectHoldForbidden(g, err, resource, ncp.Name, other2Name, v1alpha1.HoldReasonAnnotation)
	err = updateAs(other2, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		setAnnotation(ncp, v1alpha1.HoldUntilAnnotation, "", true)
	})
	expectHoldForbidden(g, err, resource, ncp.Name, other2Name, v1alpha1.HoldUntilAnnotation)

	// Creating one with a hold.
	created := namespacedProfile(namespace, parent.Name)
	created.Annotations = map[string]string{v1alpha1.HoldUntilAnnotation: holdUntil(time.Hour)}
	err = other2.Create(ctx, created)
	expectHoldForbidden(g, err, resource, created.Name, other2Name, v1alpha1.HoldUntilAnnotation)

	live := &v1alpha1.NamespacedCloudProfile{}
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(ncp), live)).To(Succeed())
	g.Expect(live.Annotations).To(HaveKeyWithValue(v1alpha1.HoldReasonAnnotation, "INC-2"))
	g.Expect(live.Annotations).To(HaveKey(v1alpha1.HoldUntilAnnotation))
	g.Expect(live.Spec.MachineTypes).To(HaveLen(2))
}

func TestAHoldTheSyncWouldRefuseIsRefusedAtAdmission(t *testing.T) {
	cp := newParent(t)
	ncp := namespacedProfile(newNamespace(t), cp.Name)
	g := NewWithT(t)
	g.Expect(adminClient.Create(context.Background(), ncp)).To(Succeed())
	oncall, _ := onCall(t)
	tests := []struct {
		name, until, reason string
		// noUntil leaves hold-until unset.
		noUntil bool
		want    string
	}{
		{
			name:  "no RFC 3339 time",
			until: "tomorrow",
			want:  `metadata.annotations: Invalid value: annotation profilesync.io/hold-until: "tomorrow" is not an RFC 3339 time (for example 2025-06-02T00:00:00Z)`,
		},
		{
			name:  "no expiry",
			until: "",
			want:  `metadata.annotations: Invalid value: annotation profilesync.io/hold-until: empty; a hold needs an expiry time in RFC 3339`,
		},
		{
			name:  "an expiry in the past",
			until: "2025-05-31T23:00:00Z",
			want:  `annotation profilesync.io/hold-until: 2025-05-31T23:00:00Z is not in the future`,
		},
		{
			name:  "an expiry beyond the maximum, the webhooks' MaxHold (48h)",
			until: "2025-06-03T00:00:01Z",
			want:  `annotation profilesync.io/hold-until: 2025-06-03T00:00:01Z is more than 48h0m0s from now (the manager's --max-hold)`,
		},
		{
			name:   "a reason too long to show",
			until:  "2025-06-02T00:00:00Z",
			reason: strings.Repeat("x", 1025),
			want:   `annotation profilesync.io/hold-reason: 1025 bytes, more than the 1024 allowed`,
		},
		{
			name:    "a reason without an expiry",
			reason:  "INC-5",
			noUntil: true,
			want:    `metadata.annotations: Invalid value: annotation profilesync.io/hold-reason is set without profilesync.io/hold-until, so nothing is held`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			set := func(obj client.Object) {
				setAnnotation(obj, v1alpha1.HoldUntilAnnotation, tt.until, tt.noUntil)
				if tt.reason != "" {
					setAnnotation(obj, v1alpha1.HoldReasonAnnotation, tt.reason, false)
				}
			}
			err := updateCloudProfileAs(oncall, cp, func(cp *v1alpha1.CloudProfile) { set(cp) })
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(`CloudProfile.core.profilesync.io "` + cp.Name + `" is invalid: `))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			err = updateAs(oncall, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) { set(ncp) })
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}

	g.Expect(updateCloudProfileAs(oncall, cp, func(cp *v1alpha1.CloudProfile) {
		setAnnotation(cp, v1alpha1.HoldUntilAnnotation, "2025-06-03T00:00:00Z", false)
	})).To(Succeed(), "exactly the maximum is allowed")
}

func TestAnExpiredHoldBlocksNeitherEditsNorTheSync(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	oncall, _ := onCall(t)
	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Annotations = map[string]string{v1alpha1.HoldUntilAnnotation: holdUntil(time.Hour), v1alpha1.HoldReasonAnnotation: "INC-4"}
	ncp.Spec.MachineImages = machineImagesOverride("2025-06-01T00:00:00Z")
	g.Expect(adminClient.Create(ctx, ncp)).To(Succeed())

	webhookClock.SetTime(testNow.Add(2 * time.Hour))
	t.Cleanup(func() { webhookClock.SetTime(testNow) })

	editor, _ := landscapeOperatorNamed(t)
	g.Expect(updateAs(editor, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.MachineTypes = append(ncp.Spec.MachineTypes, machineType("m5.8xlarge", "32", "128Gi"))
	})).To(Succeed(), "an edit that leaves the expired hold as it is")

	// The sync corrects the object once the hold has expired, as the
	// operator's service account. Its role (config/rbac/role.yaml) has the
	// verb hold, to end holds, but the verb is not what lets this apply
	// through: it leaves the hold annotations as they are, so the webhook
	// does not ask for the verb, nor judge the expired hold.
	ncp.Spec.MachineImages = machineImagesOverride("2025-12-01T00:00:00Z")
	g.Expect(syncApply(ctx, operatorClient(t), ncp)).To(Succeed())

	err := updateAs(oncall, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		setAnnotation(ncp, v1alpha1.HoldReasonAnnotation, "INC-4, still", false)
	})
	g.Expect(err).To(MatchError(ContainSubstring(`annotation profilesync.io/hold-until: `+ncp.Annotations[v1alpha1.HoldUntilAnnotation]+` is not in the future`)),
		"changing an expired hold is setting it anew")
	g.Expect(updateAs(oncall, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		setAnnotation(ncp, v1alpha1.HoldUntilAnnotation, "", true)
		setAnnotation(ncp, v1alpha1.HoldReasonAnnotation, "", true)
	})).To(Succeed(), "an expired hold can always be removed")
}
