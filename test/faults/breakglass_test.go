package faults

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// clusterRoleOf creates the ClusterRole of config/rbac/file, as the
// repository ships it, and returns its name.
func (l *landscape) clusterRoleOf(file string) string {
	l.t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		l.t.Fatalf("find the module root: %v", err)
	}
	content, err := os.ReadFile(filepath.Join(root, "config", "rbac", file))
	if err != nil {
		l.t.Fatalf("read %s: %v", file, err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(content, &role); err != nil {
		l.t.Fatalf("decode %s: %v", file, err)
	}
	if err := l.env.Client.Create(context.Background(), &role); err != nil {
		l.t.Fatalf("create ClusterRole %s: %v", role.Name, err)
	}
	return role.Name
}

// grant binds the ClusterRole role to subject in every namespace.
func (l *landscape) grant(role string, subject rbacv1.Subject) {
	l.t.Helper()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + strings.ToLower(subject.Kind) + "-" + subject.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	if err := l.env.Client.Create(context.Background(), binding); err != nil {
		l.t.Fatalf("bind %s: %v", role, err)
	}
}

// clientAs is an uncached client that impersonates user in groups.
func (l *landscape) clientAs(user string, groups ...string) client.Client {
	l.t.Helper()
	config := rest.CopyConfig(l.env.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(config, client.Options{Scheme: l.env.Scheme})
	if err != nil {
		l.t.Fatalf("client as %s: %v", user, err)
	}
	return c
}

// TestBreakGlassThroughTheWebhooksWithEveryControllerRunning is the 02:00
// story of docs/gitops.md (Emergencies) end to end: the admission webhooks
// installed (failing closed) and served, every controller running as the
// operator's service account bound to the role `make manifests` generates
// (config/rbac/role.yaml), and people acting under the sample roles of
// config/rbac. An editor without the verb hold cannot hold aws; the on-call
// engineer holds an emergency edit of it; the next revision applies to gcp
// but not to the held aws; and the revision that brings the edit into Git
// releases the hold, the operator removing the annotations through the same
// webhook, which admits it only because the operator's role has the verb.
func TestBreakGlassThroughTheWebhooksWithEveryControllerRunning(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	l := newLandscape(t, testenv.WithWebhooks())
	l.startWebhooks()

	operatorRole := l.clusterRoleOf("role.yaml")
	l.grant(operatorRole, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "profilesync-controller-manager", Namespace: landscapeNamespace})
	operator := &rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + landscapeNamespace + ":profilesync-controller-manager",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + landscapeNamespace, "system:authenticated"},
	}
	l.grant(l.clusterRoleOf("role_landscape_operator.yaml"), rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "editor"})
	l.grant(l.clusterRoleOf("role_on_call.yaml"), rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "on-call"})
	editor := l.clientAs("editor", "landscape-operators", "system:authenticated")
	oncall := l.clientAs("oncall", "on-call", "system:authenticated")

	// 1. The landscape: aws and gcp applied by the operator.
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws", "gcp"}, nil))
	l.createSync(time.Hour)
	// The sync's clock, which judges holds; the webhooks run on real time
	// too (startWebhooks), and both take the default --max-hold.
	clk := clock.RealClock{}
	faults := &faultTransport{}
	l.startManager(managerConfig{clock: clk, user: operator, faults: faults})
	l.waitApplied(first, 30*time.Second)
	var aws v1alpha1.CloudProfile
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "aws"}, &aws)).To(Succeed())
	g.Expect(aws.Spec.MachineTypes[0].Memory.String()).To(Equal("8Gi"))
	// The profile status controller may still write aws's status, which
	// moves its resourceVersion, so "nothing changed" is judged on what the
	// refused update would have written: metadata and spec.
	before := aws.DeepCopy()

	// The emergency edit: m5.large's memory, a field Git sets, so drift.
	breakGlass := func(c client.Client, reason string) error {
		var cp v1alpha1.CloudProfile
		if err := c.Get(ctx, client.ObjectKey{Name: "aws"}, &cp); err != nil {
			return err
		}
		cp.Spec.MachineTypes[0].Memory = resource.MustParse("1Gi")
		if cp.Annotations == nil {
			cp.Annotations = map[string]string{}
		}
		cp.Annotations[v1alpha1.HoldUntilAnnotation] = clk.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		cp.Annotations[v1alpha1.HoldReasonAnnotation] = reason
		return c.Update(ctx, &cp)
	}

	// 2. An editor without the verb hold: refused by the webhook, nothing
	// changes.
	err := breakGlass(editor, "INC-4711: m5.large lost memory")
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`admission webhook "vcloudprofile.core.profilesync.io" denied the request`))
	g.Expect(err.Error()).To(ContainSubstring(`user "editor" may not set, change or remove the hold annotation ` + v1alpha1.HoldUntilAnnotation))
	g.Expect(err.Error()).To(ContainSubstring(`breaking glass needs the verb "hold" on cloudprofiles.core.profilesync.io`))
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "aws"}, &aws)).To(Succeed())
	g.Expect(aws.Generation).To(Equal(before.Generation), "the refused update changed nothing")
	g.Expect(aws.Annotations).To(Equal(before.Annotations), "the refused update changed nothing")
	g.Expect(equality.Semantic.DeepEqual(aws.Spec, before.Spec)).To(BeTrue(), "the refused update changed nothing")
	g.Expect(aws.Annotations).NotTo(HaveKey(v1alpha1.HoldUntilAnnotation))
	g.Expect(aws.Spec.MachineTypes[0].Memory.String()).To(Equal("8Gi"))

	// 3. The on-call engineer, with edit rights and the verb hold, breaks
	// glass: the edit and its hold in one update. The hold syncs the
	// ProfileSync at once, which records the drift.
	g.Expect(breakGlass(oncall, "INC-4711: m5.large lost memory")).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := l.current(g)
		g.Expect(conditions.IsTrue(got, v1alpha1.HeldCondition)).To(BeTrue())
		g.Expect(conditions.GetMessage(got, v1alpha1.HeldCondition)).To(ContainSubstring("CloudProfile/aws held until"))
		g.Expect(got.Status.Holds).To(HaveLen(1))
		g.Expect(got.Status.Holds[0].DriftedFields).To(Equal([]string{"spec.machineTypes[0] (m5.large).memory"}))
	}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())

	// 4. A revision that changes both: gcp takes it, the held aws keeps the
	// emergency edit and does not.
	second := l.commit(profilesRepo([]string{"1.33.0", "1.34.0"}, []string{"aws", "gcp"}, nil))
	l.requestSync("second")
	applied := l.waitApplied(second, 30*time.Second)
	g.Expect(conditions.IsTrue(applied, v1alpha1.HeldCondition)).To(BeTrue())
	g.Expect(applied.Status.Holds).To(HaveLen(1))
	g.Expect(applied.Status.Holds[0].Name).To(Equal("aws"))
	var gcp v1alpha1.CloudProfile
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "gcp"}, &gcp)).To(Succeed())
	g.Expect(gcp.Spec.Kubernetes.Versions).To(HaveLen(2), "the rest of the revision applies")
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "aws"}, &aws)).To(Succeed())
	g.Expect(aws.Spec.MachineTypes[0].Memory.String()).To(Equal("1Gi"), "the emergency edit stands")
	g.Expect(aws.Spec.Kubernetes.Versions).To(HaveLen(1), "the held aws takes nothing of the revision")
	g.Expect(aws.Annotations).To(HaveKeyWithValue(v1alpha1.HoldReasonAnnotation, "INC-4711: m5.large lost memory"))

	// 5. Git catches up: the emergency edit is in the next revision. The
	// sync releases the hold, removing the annotations with a JSON patch as
	// the operator, which the webhook admits (the role has the verb hold),
	// and applies aws as Git has it.
	var mu sync.Mutex
	var awsPatches []string
	faults.inject(func(req *http.Request) (*http.Response, error) {
		if w := parseWrite(req); w.Method == http.MethodPatch && w.Resource == "cloudprofiles" && w.Name == "aws" &&
			req.Header.Get("Content-Type") == string(types.JSONPatchType) && req.GetBody != nil {
			if body, err := req.GetBody(); err == nil {
				content, _ := io.ReadAll(body)
				mu.Lock()
				awsPatches = append(awsPatches, string(content))
				mu.Unlock()
			}
		}
		return nil, nil
	})
	fix := l.commit(emergencyInGit())
	l.requestSync("fixed")
	released := l.waitApplied(fix, 30*time.Second)
	g.Expect(released.Status.Holds).To(BeEmpty())
	g.Expect(conditions.Has(released, v1alpha1.HeldCondition)).To(BeFalse(), "Held is gone")
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "aws"}, &aws)).To(Succeed())
	g.Expect(aws.Annotations).NotTo(HaveKey(v1alpha1.HoldUntilAnnotation))
	g.Expect(aws.Annotations).NotTo(HaveKey(v1alpha1.HoldReasonAnnotation))
	g.Expect(aws.Spec.MachineTypes[0].Memory.String()).To(Equal("1Gi"))
	g.Expect(aws.Spec.Kubernetes.Versions).To(HaveLen(2), "released, aws takes the version it was held from")
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "gcp"}, &gcp)).To(Succeed())
	awsFromGit := gcp.Spec.DeepCopy()
	awsFromGit.MachineTypes[0].Memory = resource.MustParse("1Gi")
	g.Expect(aws.Spec).To(BeComparableTo(*awsFromGit), "aws is as Git has it: gcp's spec but for the memory")
	mu.Lock()
	g.Expect(awsPatches).To(ContainElement(And(
		ContainSubstring(`"op":"remove","path":"/metadata/annotations/profilesync.io~1hold-until"`),
		ContainSubstring(`"op":"remove","path":"/metadata/annotations/profilesync.io~1hold-reason"`),
	)), "the operator removed both annotations")
	mu.Unlock()
	g.Eventually(func(g Gomega) {
		events := l.events(g, corev1.EventTypeNormal)
		g.Expect(events[v1alpha1.HoldReleasedReason]).To(ConsistOf(HavePrefix("CloudProfile/aws: Git caught up")))
	}).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
}
