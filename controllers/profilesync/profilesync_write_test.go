package profilesync

import (
	"context"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// TestProfileSyncReconciler_write: how a refused write is reported. The
// errors are the API server's own (k8s.io/apiserver's admission plugins and
// validation): a webhook it could not call is retried and named, a webhook
// or rule that judged the object stops the revision.
func TestProfileSyncReconciler_write(t *testing.T) {
	resource := schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "cloudprofiles"}
	kind := v1alpha1.GroupVersion.WithKind(v1alpha1.CloudProfileKind).GroupKind()
	tests := []struct {
		name        string
		err         error
		wantCond    string
		wantStalled bool
		wantMessage string
	}{{
		name:        "a webhook the API server cannot reach is retried and named",
		err:         apierrors.NewInternalError(errors.New(`failed calling webhook "vcloudprofile.core.profilesync.io": failed to call webhook: Post "https://webhook-service.system.svc:443/validate?timeout=10s": dial tcp 10.0.0.1:443: connect: connection refused`)),
		wantCond:    v1alpha1.ApplyFailedCondition,
		wantMessage: `apply CloudProfile/aws: admission webhook "vcloudprofile.core.profilesync.io" could not be called; retrying: Internal error occurred: failed calling webhook`,
	}, {
		name:        "a webhook that times out is retried and named",
		err:         apierrors.NewInternalError(errors.New(`failed calling webhook "vcloudprofile.core.profilesync.io": failed to call webhook: Post "https://webhook-service.system.svc:443/validate?timeout=10s": context deadline exceeded`)),
		wantCond:    v1alpha1.ApplyFailedCondition,
		wantMessage: `admission webhook "vcloudprofile.core.profilesync.io" could not be called`,
	}, {
		name:        "another internal error is retried as it is",
		err:         apierrors.NewInternalError(errors.New("etcdserver: request timed out")),
		wantCond:    v1alpha1.ApplyFailedCondition,
		wantMessage: "apply CloudProfile/aws: Internal error occurred: etcdserver: request timed out",
	}, {
		name:        "a webhook that denies stops the revision",
		err:         apierrors.NewForbidden(resource, "aws", fmt.Errorf(`admission webhook "vcloudprofile.core.profilesync.io" denied the request: spec: Forbidden: in use`)),
		wantCond:    v1alpha1.ValidationFailedCondition,
		wantStalled: true,
		wantMessage: "profiles.yaml: CloudProfile/aws: refused by the API server:",
	}, {
		name:        "a rule of the API server stops the revision",
		err:         apierrors.NewInvalid(kind, "aws", field.ErrorList{field.Required(field.NewPath("spec", "type"), "")}),
		wantCond:    v1alpha1.ValidationFailedCondition,
		wantStalled: true,
		wantMessage: "spec.type: Required value",
	}}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
				Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
					return tt.err
				},
			}).Build()
			r := &ProfileSyncReconciler{Client: c}
			obj := stepSync("profilesync-system")
			item := planItem{object: gitObject(stepCloudProfile("aws", "1.33.0"))}
			desired, err := applyObject(item.object, ownerLabels(obj))
			g.Expect(err).NotTo(HaveOccurred())
			err = r.write(context.Background(), writeIdentity{Writer: c}, applyChange{item: item, desired: desired})
			var failed *syncError
			g.Expect(errors.As(err, &failed)).To(BeTrue())
			g.Expect(failed.condition).To(Equal(tt.wantCond))
			g.Expect(failed.stalled).To(Equal(tt.wantStalled))
			g.Expect(failed.Error()).To(ContainSubstring(tt.wantMessage))
		})
	}
}
