package statuspatch_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/statuspatch"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

// answers records the bodies of the answers to status writes.
type answers struct {
	next   http.RoundTripper
	mu     sync.Mutex
	bodies [][]byte
}

func (a *answers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPatch || !bytes.HasSuffix([]byte(req.URL.Path), []byte("/status")) {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.bodies = append(a.bodies, body)
	a.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// A NamespacedCloudProfile's status holds its whole merged profile: the
// status write sends it once, and the API server does not send it back.
func TestAStatusWriteIsAnsweredWithMetadataOnly(t *testing.T) {
	g := NewWithT(t)
	env := testenv.StartForTest(t)
	ctx := context.Background()
	recorded := &answers{}
	config := rest.CopyConfig(env.Config)
	config.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		recorded.next = rt
		return recorded
	}
	c, err := client.New(config, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	spec := builders.WithRequiredLists(v1alpha1.CloudProfileSpec{Type: "a-type-only-the-spec-holds",
		Kubernetes: v1alpha1.KubernetesSettings{Versions: builders.GEP32KubernetesVersions()}})
	cp := &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "answered"}, Spec: spec}
	g.Expect(env.Client.Create(ctx, cp)).To(Succeed())
	before := cp.DeepCopy()
	cp.Status.ObservedGeneration = cp.Generation
	cp.Status.Kubernetes = &v1alpha1.KubernetesStatus{}
	for _, v := range spec.Kubernetes.Versions {
		cp.Status.Kubernetes.Versions = append(cp.Status.Kubernetes.Versions, v1alpha1.VersionStatus{Version: v.Version, Classification: v1alpha1.ClassificationSupported})
	}

	const message = "a message only the status holds"
	cp.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.SucceededReason,
		Message: message, LastTransitionTime: metav1.Now()}}

	g.Expect(statuspatch.Write(ctx, c, before, cp, &cp.Status)).To(Succeed())

	stored := &v1alpha1.CloudProfile{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cp), stored)).To(Succeed())
	g.Expect(stored.Status.Kubernetes).To(Equal(cp.Status.Kubernetes), "the status is written")
	g.Expect(stored.Status.ObservedGeneration).To(Equal(cp.Generation))
	g.Expect(stored.Status.Conditions).To(ContainElement(HaveField("Message", message)))
	g.Expect(stored.ManagedFields).To(ContainElement(HaveField("Manager", statuspatch.FieldManager)))
	g.Expect(recorded.bodies).To(HaveLen(1), "one request")
	answer := string(recorded.bodies[0])
	g.Expect(answer).To(ContainSubstring("PartialObjectMetadata"), "the answer is the object's metadata")
	g.Expect(answer).NotTo(ContainSubstring(message), "the status is not sent back")
	g.Expect(answer).NotTo(ContainSubstring("a-type-only-the-spec-holds"), "nor the spec")
}
