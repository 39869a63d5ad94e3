package profilesync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/syncplan"
	"github.com/profilesync/profilesync/test/testenv"
)

// TestARevisionTooLargeToStoreIsRefusedBeforeAnyWrite: a revision with a
// profile larger than the API server can store is refused by the sync's own
// checks, naming the object, and stalls: the API server would refuse it on
// every retry. Nothing is written and the good revision stays applied.
func TestARevisionTooLargeToStoreIsRefusedBeforeAnyWrite(t *testing.T) {
	ensureNamespace(t, clusterProfilesNamespace)
	ensureNamespace(t, "team-size")
	server := startGitServer(t)
	for _, row := range []struct {
		name string
		// commit returns the files of the revision for the profile named
		// profile, replacing profiles.yaml.
		commit    func(profileName string) map[string]string
		wantInMsg []string
	}{{
		name: "a CloudProfile of 1.5 MiB",
		commit: func(name string) map[string]string {
			return map[string]string{"profiles.yaml": profileOfSize(name, 1536<<10)}
		},
		wantInMsg: []string{"profiles.yaml: CloudProfile/%s: Too long: ", fmt.Sprintf("more than the %d it can store", profile.MaxStoredSize)},
	}, {
		name: "a small NamespacedCloudProfile whose merged profile its status holds is too large",
		commit: func(name string) map[string]string {
			return map[string]string{
				"profiles.yaml": profileOfSize(name, profile.MaxStoredSize-20<<10),
				"team.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n  name: " + name +
					"\n  namespace: team-size\nspec:\n  parent:\n    kind: CloudProfile\n    name: " + name + "\n  providerConfig:\n    team: " + strings.Repeat("y", 40<<10) + "\n",
			}
		},
		wantInMsg: []string{"team.yaml: NamespacedCloudProfile/team-size/%s: Too long: ", "status.cloudProfileSpec, the profile merged with its parent CloudProfile \"%s\""},
	}} {
		t.Run(row.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			landscape := applyGoodRevision(t, server, "too-large")
			repo, profileName, good, sync, applied := landscape.repo, landscape.profile, landscape.good, landscape.sync, landscape.applied

			_, err := server.Commit(repo, row.commit(profileName), "too large")
			g.Expect(err).NotTo(HaveOccurred())
			requestSync(t, sync, "too-large")
			g.Eventually(func(g Gomega) {
				got := getProfileSync(g, sync)
				g.Expect(got.Status.LastHandledReconcileAt).To(Equal("too-large"))
				g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.ValidationFailedReason))
				g.Expect(conditions.IsStalled(got)).To(BeTrue(), "the API server would refuse it on every retry")
				for _, want := range row.wantInMsg {
					if strings.Contains(want, "%s") {
						want = fmt.Sprintf(want, profileName)
					}
					g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring(want))
				}
			}).WithTimeout(30 * time.Second).Should(Succeed())

			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+good), "the good revision stays the applied one")
			var after v1alpha1.CloudProfile
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: profileName}, &after)).To(Succeed())
			g.Expect(after.Generation).To(Equal(applied.Generation), "nothing was written")
			g.Expect(after.Spec.ProviderConfig).To(BeNil(), "nothing was written")
			err = k8sClient.Get(ctx, client.ObjectKey{Namespace: "team-size", Name: profileName}, &v1alpha1.NamespacedCloudProfile{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing was written")
		})
	}
}

// TestWriteStallsOnWhatTheAPIServerCannotStore applies profiles too large for
// the API server directly, past the sync's checks (as if the cluster's etcd
// took less than its default): each limit of the chain refuses it with its
// own error, and every one stops the revision instead of being retried.
func TestWriteStallsOnWhatTheAPIServerCannotStore(t *testing.T) {
	for _, row := range []struct {
		name string
		blob int
		// wantRefusal is the API server's error as the client sees it.
		wantRefusal string
	}{{
		name:        "over etcd's --max-request-bytes (1.5 MiB)",
		blob:        1600 << 10,
		wantRefusal: "etcdserver: request is too large",
	}, {
		name:        "over the API server's etcd client's send limit (2 MiB)",
		blob:        2 << 20,
		wantRefusal: "rpc error: code = ResourceExhausted desc = trying to send message larger than max",
	}, {
		name:        "over the API server's request limit (3 MiB)",
		blob:        3<<20 + 1<<10,
		wantRefusal: "Request entity too large: limit is 3145728",
	}} {
		t.Run(row.name, func(t *testing.T) {
			g := NewWithT(t)
			name := testenv.UniqueName("unstorable")
			cp := stepCloudProfile(name, "1.31.0")
			cp.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"blob":"` + strings.Repeat("x", row.blob) + `"}`)}
			write := writeOf(t, cp, stepSync(clusterProfilesNamespace), syncplan.StageParents)

			r := &ProfileSyncReconciler{Client: k8sClient}
			// Counted, not timed: a transient failure is retried within a
			// third of a second, which a loaded machine can take anyway.
			base, err := client.NewWithWatch(restConfig, client.Options{Scheme: testScheme})
			g.Expect(err).NotTo(HaveOccurred())
			applies := 0
			counting := interceptor.NewClient(base, interceptor.Funcs{
				Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
					applies++
					return c.Apply(ctx, obj, opts...)
				},
			})
			err = r.write(context.Background(), writeIdentity{Writer: counting}, write)
			var failed *syncError
			g.Expect(errors.As(err, &failed)).To(BeTrue(), "%v", err)
			g.Expect(failed.condition).To(Equal(v1alpha1.ValidationFailedCondition), failed.Error())
			g.Expect(failed.stalled).To(BeTrue())
			g.Expect(failed.Error()).To(ContainSubstring("profiles.yaml: CloudProfile/" + name + ": refused by the API server"))
			g.Expect(failed.Error()).To(ContainSubstring(row.wantRefusal))
			g.Expect(applies).To(Equal(1), "not retried as a transient failure")
			err = k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, &v1alpha1.CloudProfile{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		})
	}
}

// TestTheDryRunStopsAStageTheAPIServerRefuses: a stage of several writes is
// dry-run first, so that an object the API server refuses, which the sync's
// checks let through, stops the revision before any other is written. The
// refused object here is over the API server's request limit, which the
// sync's checks refuse already; the stage is applied directly, past them.
func TestTheDryRunStopsAStageTheAPIServerRefuses(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	good, bad := testenv.UniqueName("dry-run-good"), testenv.UniqueName("dry-run-bad")
	refused := stepCloudProfile(bad, "1.31.0")
	refused.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"blob":"` + strings.Repeat("x", 3<<20+1<<10) + `"}`)}
	var changes []syncplan.Write
	for _, cp := range []*v1alpha1.CloudProfile{stepCloudProfile(good, "1.31.0"), refused} {
		changes = append(changes, writeOf(t, cp, stepSync(clusterProfilesNamespace), syncplan.StageParents))
	}

	err := (&ProfileSyncReconciler{Client: k8sClient}).applyStages(ctx, stepSync(clusterProfilesNamespace), writeIdentity{Writer: k8sClient}, changes, nil)
	var failed *syncError
	g.Expect(errors.As(err, &failed)).To(BeTrue(), "%v", err)
	g.Expect(failed.condition).To(Equal(v1alpha1.ValidationFailedCondition))
	g.Expect(failed.Error()).To(ContainSubstring("profiles.yaml: CloudProfile/" + bad + ": refused by the API server"))
	for _, name := range []string{good, bad} {
		err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, &v1alpha1.CloudProfile{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), name)
	}
}
