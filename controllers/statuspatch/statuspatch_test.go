package statuspatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/statuspatch"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

// env is the package's one control plane.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(started *testenv.Env) { env = started }))
}

// statusRequest is one request to a status subresource and its answer.
type statusRequest struct {
	method string
	query  string
	body   []byte
	code   int
	answer []byte
}

// recorder records the requests to status subresources that pass through it.
type recorder struct {
	next     http.RoundTripper
	mu       sync.Mutex
	requests []statusRequest
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/status") {
		return r.next.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	answer, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	r.mu.Lock()
	r.requests = append(r.requests, statusRequest{method: req.Method, query: req.URL.RawQuery, body: body, code: resp.StatusCode, answer: answer})
	r.mu.Unlock()
	return resp, nil
}

// sent is what the recorder saw: each request's method and answer's code.
func (r *recorder) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sent []string
	for _, req := range r.requests {
		sent = append(sent, fmt.Sprintf("%s %d", req.method, req.code))
	}
	return sent
}

// recordedClients are an operator's client (statuspatch.NewClient) and a
// plain one of the same API server, whose status requests rec records.
func recordedClients(t testing.TB) (operator *statuspatch.Client, plain client.Client, rec *recorder) {
	t.Helper()
	rec = &recorder{}
	config := rest.CopyConfig(env.Config)
	config.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		rec.next = rt
		return rec
	}
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	plain, err = client.New(config, client.Options{Scheme: env.Scheme, HTTPClient: httpClient})
	if err != nil {
		t.Fatal(err)
	}
	operator, err = statuspatch.NewClient(plain, config, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	return operator, plain, rec
}

// namespace creates a namespace of its own for a test.
func namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("statuspatch")}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// mergedProfile is a CloudProfile spec of kubernetes Kubernetes versions and
// images machine images of imageVersions versions each, all with 4-stage
// lifecycles, as the merged profile of a NamespacedCloudProfile's status
// holds it, and its classifications.
func mergedProfile(kubernetes, images, imageVersions int) (*v1alpha1.CloudProfileSpec, v1alpha1.ProfileVersionsStatus) {
	lifecycle := func(i int) []v1alpha1.LifecycleStage {
		start := builders.Time("2024-01-01T00:00:00Z").Add(time.Duration(i) * 7 * 24 * time.Hour)
		at := func(days int) string { return start.Add(time.Duration(days) * 24 * time.Hour).Format(time.RFC3339) }
		return []v1alpha1.LifecycleStage{
			builders.Stage(v1alpha1.ClassificationPreview, at(0)), builders.Stage(v1alpha1.ClassificationSupported, at(1)),
			builders.Stage(v1alpha1.ClassificationDeprecated, at(30)), builders.Stage(v1alpha1.ClassificationExpired, at(400)),
		}
	}
	spec := builders.Profile()
	spec.Kubernetes.Versions = nil
	spec.MachineImages = nil
	versions := v1alpha1.ProfileVersionsStatus{Kubernetes: &v1alpha1.KubernetesStatus{}}
	for v := range kubernetes {
		version := fmt.Sprintf("1.%d.0", v)
		spec.Kubernetes.Versions = append(spec.Kubernetes.Versions, builders.Staged(version, lifecycle(v)...))
		versions.Kubernetes.Versions = append(versions.Kubernetes.Versions, v1alpha1.VersionStatus{Version: version, Classification: v1alpha1.ClassificationSupported})
	}
	for n := range images {
		image := v1alpha1.MachineImage{Name: fmt.Sprintf("image-%d", n), UpdateStrategy: builders.Strategy(v1alpha1.UpdateStrategyMinor)}
		classified := v1alpha1.MachineImageStatus{Name: image.Name}
		for v := range imageVersions {
			version := fmt.Sprintf("%d.%d.0", 1000+n, v)
			image.Versions = append(image.Versions, v1alpha1.MachineImageVersion{
				ExpirableVersion: builders.Staged(version, lifecycle(v)...), Architectures: []string{"amd64", "arm64"}})
			classified.Versions = append(classified.Versions, v1alpha1.VersionStatus{Version: version, Classification: v1alpha1.ClassificationSupported})
		}
		spec.MachineImages = append(spec.MachineImages, image)
		versions.MachineImages = append(versions.MachineImages, classified)
	}
	return spec, versions
}

// namespacedProfile creates a NamespacedCloudProfile in ns as the sync would,
// labelled, annotated and owned by the field manager "profilesync", with
// an empty status.
func namespacedProfile(t testing.TB, ns, name string) *v1alpha1.NamespacedCloudProfile {
	t.Helper()
	obj := &v1alpha1.NamespacedCloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{"a-label": "only-the-sync-sets"},
			Annotations: map[string]string{"an-annotation": "only the sync sets"}},
		Spec: *builders.Namespaced(),
	}
	obj.Spec.Parent.Name = "a-parent-only-the-spec-names"
	if err := env.Client.Create(context.Background(), obj, client.FieldOwner("profilesync")); err != nil {
		t.Fatal(err)
	}
	return obj
}

// withStatus is obj with the status of a merged profile of 600 versions (or
// the sizes given) and a Ready condition saying message.
func withStatus(obj *v1alpha1.NamespacedCloudProfile, message string, kubernetes, images, imageVersions int) *v1alpha1.NamespacedCloudProfile {
	after := obj.DeepCopy()
	merged, versions := mergedProfile(kubernetes, images, imageVersions)
	after.Status.ObservedGeneration = obj.Generation
	after.Status.CloudProfileSpec = merged
	after.Status.ProfileVersionsStatus = versions
	after.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.SucceededReason,
		Message: message, LastTransitionTime: metav1.NewTime(builders.Time("2026-01-01T00:00:00Z"))}}
	return after
}

func stored(g Gomega, obj client.Object) *v1alpha1.NamespacedCloudProfile {
	got := &v1alpha1.NamespacedCloudProfile{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got)).To(Succeed())
	return got
}

// A NamespacedCloudProfile's status holds its whole merged profile: the
// status write sends it once, with nothing else of the object, and the API
// server does not send it back. Everything but the status stays as the
// sync wrote it.
func TestAStatusWriteIsOneUpdateOfTheStatusSubresourceAnsweredWithMetadataOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	operator, _, rec := recordedClients(t)
	before := namespacedProfile(t, namespace(t), "updated")
	const message = "a message only the status holds"
	after := withStatus(before, message, 20, 2, 10)

	g.Expect(statuspatch.Write(ctx, operator, before, after, &after.Status)).To(Succeed())

	g.Expect(rec.sent()).To(Equal([]string{"PUT 200"}), "one update")
	request := rec.requests[0]
	g.Expect(request.query).To(Equal("fieldManager=" + statuspatch.FieldManager))
	var top map[string]json.RawMessage
	g.Expect(json.Unmarshal(request.body, &top)).To(Succeed())
	g.Expect(top).To(SatisfyAll(HaveLen(4), HaveKey("apiVersion"), HaveKey("kind"), HaveKey("metadata"), HaveKey("status")), "no spec")
	var metadata struct {
		Metadata map[string]string `json:"metadata"`
	}
	g.Expect(json.Unmarshal(request.body, &metadata)).To(Succeed())
	g.Expect(metadata.Metadata).To(Equal(map[string]string{"name": before.Name, "namespace": before.Namespace,
		"resourceVersion": before.ResourceVersion}), "no spec, no labels, no annotations: only what names the object and the version read")
	g.Expect(string(request.answer)).To(ContainSubstring(`"kind":"PartialObjectMetadata"`), "the answer is the object's metadata")
	g.Expect(string(request.answer)).NotTo(ContainSubstring(message), "the status is not sent back")
	g.Expect(string(request.answer)).NotTo(ContainSubstring("a-parent-only-the-spec-names"), "nor the spec")

	got := stored(g, before)
	g.Expect(equality.Semantic.DeepEqual(got.Status, after.Status)).To(BeTrue(), "the status is written")
	g.Expect(got.Spec).To(Equal(before.Spec), "the spec stays")
	g.Expect(got.Labels).To(Equal(before.Labels))
	g.Expect(got.Annotations).To(Equal(before.Annotations))
	g.Expect(got.ManagedFields).To(ContainElement(And(HaveField("Manager", statuspatch.FieldManager), HaveField("Subresource", "status"))))
	g.Expect(got.ManagedFields).To(ContainElement(And(HaveField("Manager", "profilesync"), HaveField("Subresource", ""))),
		"the sync still owns what it wrote")
}

// Between the read and the write, the sync applied a new spec or a user
// annotated the profile: the update is refused and the JSON patch, which
// needs no resourceVersion, writes the status as it would alone.
func TestAStatusWriteFromAStaleReadIsOneUpdateRefusedThenOnePatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	operator, _, rec := recordedClients(t)
	before := namespacedProfile(t, namespace(t), "stale")
	changed := before.DeepCopy()
	changed.Annotations["a-user"] = "annotated it meanwhile"
	g.Expect(env.Client.Update(ctx, changed)).To(Succeed())
	after := withStatus(before, "computed from the read", 20, 2, 10)

	g.Expect(statuspatch.Write(ctx, operator, before, after, &after.Status)).To(Succeed())

	g.Expect(rec.sent()).To(Equal([]string{"PUT 409", "PATCH 200"}), "one refused update, one patch, nothing else")
	g.Expect(string(rec.requests[1].answer)).To(ContainSubstring("PartialObjectMetadata"), "in protobuf: client-go's metadata client asks for it first")
	got := stored(g, before)
	g.Expect(equality.Semantic.DeepEqual(got.Status, after.Status)).To(BeTrue(), "the status is written")
	g.Expect(got.Annotations).To(Equal(changed.Annotations), "the change made meanwhile stays")
	g.Expect(got.ManagedFields).To(ContainElement(And(HaveField("Manager", statuspatch.FieldManager), HaveField("Subresource", "status"))))
}

// A profile deleted while it was reconciled needs no status.
func TestAStatusWriteOfADeletedObjectIsNoError(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	operator, _, rec := recordedClients(t)
	before := namespacedProfile(t, namespace(t), "deleted")
	g.Expect(env.Client.Delete(ctx, before)).To(Succeed())
	after := withStatus(before, "too late", 1, 1, 1)

	g.Expect(statuspatch.Write(ctx, operator, before, after, &after.Status)).To(Succeed())
	g.Expect(rec.sent()).To(Equal([]string{"PUT 404"}), "gone: nothing to patch either")
}

func TestAnUnchangedObjectIsNotWritten(t *testing.T) {
	g := NewWithT(t)
	operator, _, rec := recordedClients(t)
	before := namespacedProfile(t, namespace(t), "unchanged")

	g.Expect(statuspatch.Write(context.Background(), operator, before, before.DeepCopy(), &before.Status)).To(Succeed())
	g.Expect(rec.sent()).To(BeEmpty())
}

// A client that is not statuspatch.NewClient's (controller-runtime's fake
// client in tests, here a plain one) writes the JSON patch alone.
func TestAPlainClientWritesTheJSONPatchAnsweredWithMetadataOnly(t *testing.T) {
	g := NewWithT(t)
	_, plain, rec := recordedClients(t)
	before := namespacedProfile(t, namespace(t), "patched")
	const message = "a message only the status holds"
	after := withStatus(before, message, 20, 2, 10)

	g.Expect(statuspatch.Write(context.Background(), plain, before, after, &after.Status)).To(Succeed())

	g.Expect(rec.sent()).To(Equal([]string{"PATCH 200"}))
	g.Expect(rec.requests[0].query).To(Equal("fieldManager=" + statuspatch.FieldManager))
	g.Expect(string(rec.requests[0].answer)).To(ContainSubstring("PartialObjectMetadata"), "in protobuf: client-go's metadata client asks for it first")
	g.Expect(string(rec.requests[0].answer)).NotTo(ContainSubstring(message))
	g.Expect(equality.Semantic.DeepEqual(stored(g, before).Status, after.Status)).To(BeTrue())
}
