package testenv

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

var nameCounter atomic.Int64

// UniqueName keeps tests independent on the shared API server.
func UniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameCounter.Add(1))
}

// UpdateSpec re-reads obj with c, applies mutate and updates it, retrying
// when a status write of the controllers got in between.
func UpdateSpec[T client.Object](t *testing.T, c client.Client, obj T, mutate func(T)) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return c.Update(ctx, obj)
	})
	if err != nil {
		t.Fatalf("update %s: %v", obj.GetName(), err)
	}
}

// SettledResourceVersion waits until obj, read with c, has not changed for a
// second and returns its resourceVersion: the controllers' reaction to
// creating it is over.
func SettledResourceVersion(g gomega.Gomega, c client.Reader, obj client.Object) string {
	var last string
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(gomega.Succeed())
		rv := obj.GetResourceVersion()
		changed := rv != last
		last = rv
		g.Expect(changed).To(gomega.BeFalse())
	}).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(gomega.Succeed())
	return last
}

// GetCloudProfile reads the CloudProfile name with c.
func GetCloudProfile(g gomega.Gomega, c client.Reader, name string) *v1alpha1.CloudProfile {
	var cp v1alpha1.CloudProfile
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, &cp)).To(gomega.Succeed())
	return &cp
}

// GetNamespacedCloudProfile reads obj anew with c.
func GetNamespacedCloudProfile(g gomega.Gomega, c client.Reader, obj *v1alpha1.NamespacedCloudProfile) *v1alpha1.NamespacedCloudProfile {
	var got v1alpha1.NamespacedCloudProfile
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), &got)).To(gomega.Succeed())
	return &got
}
