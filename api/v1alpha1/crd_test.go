package v1alpha1_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func TestCRDsAreInstalledWithPrinterColumnsAndShortNames(t *testing.T) {
	want := map[string]struct {
		shortName string
		columns   []string
	}{
		"cloudprofiles.core.profilesync.io":           {"cpfl", []string{"Type", "Ready", "Next Transition", "Held Until", "Status", "Age"}},
		"namespacedcloudprofiles.core.profilesync.io": {"ncp", []string{"Parent", "Ready", "Next Transition", "Held Until", "Status", "Age"}},
		"profilesyncs.core.profilesync.io":            {"psync", []string{"URL", "Path", "Ready", "Revision", "Held", "Waiting For", "Eligible", "Status", "Age"}},
		"versionupdates.core.profilesync.io":          {"vu", []string{"ProfileSync", "Branch", "Ready", "Reason", "Proposal", "Last Check", "Status", "Age"}},
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			scheme := k8sClient.Scheme()
			g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
			var crd apiextensionsv1.CustomResourceDefinition
			g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, &crd)).To(Succeed())

			g.Expect(crd.Spec.Names.ShortNames).To(ContainElement(w.shortName))
			g.Expect(crd.Spec.Names.Categories).To(ContainElement("profilesync-all"))
			g.Expect(crd.Spec.Versions).To(HaveLen(1))
			version := crd.Spec.Versions[0]
			g.Expect(version.Subresources).NotTo(BeNil())
			g.Expect(version.Subresources.Status).NotTo(BeNil())
			var columns []string
			for _, c := range version.AdditionalPrinterColumns {
				columns = append(columns, c.Name)
				if c.Name == "Next Transition" || c.Name == "Held Until" {
					// A date column prints <invalid> for future times.
					g.Expect(c.Type).To(Equal("string"))
				}
				if c.Name == "Held Until" {
					g.Expect(c.JSONPath).To(Equal(`.status.heldUntil`), "a hold the sync honours, never a refused one's annotation")
				}
			}
			g.Expect(columns).To(Equal(w.columns))
		})
	}
}

// TestSamplesAreAccepted applies every object of config/samples as written.
func TestSamplesAreAccepted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "core_*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(HaveLen(4))

	decoder := serializer.NewCodecFactory(k8sClient.Scheme()).UniversalDeserializer()
	for _, file := range files {
		data, err := os.ReadFile(file)
		g.Expect(err).NotTo(HaveOccurred())
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			g.Expect(err).NotTo(HaveOccurred(), file)
			obj, _, err := decoder.Decode(doc, nil, nil)
			g.Expect(err).NotTo(HaveOccurred(), file)
			cobj := obj.(client.Object)
			if ns := cobj.GetNamespace(); ns != "" {
				// The landscape's ProfileSync lives in the operator's namespace.
				err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
				g.Expect(err).To(Or(Not(HaveOccurred()), WithTransform(apierrors.IsAlreadyExists, BeTrue())), file)
			}
			g.Expect(k8sClient.Create(ctx, cobj)).To(Succeed(), file)
			t.Cleanup(func() { _ = k8sClient.Delete(ctx, cobj) })
		}
	}
}

// TestStatusIsASubresource proves that spec and status are written separately:
// the controllers own status and the sync owns spec, and neither can clobber
// the other.
func TestStatusIsASubresource(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp := validCloudProfile()
	g.Expect(k8sClient.Create(ctx, cp)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, cp) })
	generation := cp.Generation

	// A status update does not change spec.
	cp.Status.Kubernetes = &v1alpha1.KubernetesStatus{Versions: []v1alpha1.VersionStatus{
		{Version: "1.27.0", Classification: v1alpha1.ClassificationSupported},
	}}
	cp.Spec.Type = "changed-through-status"
	g.Expect(k8sClient.Status().Update(ctx, cp)).To(Succeed())
	var stored v1alpha1.CloudProfile
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cp), &stored)).To(Succeed())
	g.Expect(stored.Spec.Type).To(Equal("local"))
	g.Expect(stored.Generation).To(Equal(generation))
	g.Expect(stored.Status.Kubernetes.Versions).To(HaveLen(1))

	// A spec update does not change status.
	stored.Spec.Type = "other"
	stored.Status.Kubernetes = nil
	g.Expect(k8sClient.Update(ctx, &stored)).To(Succeed())
	var after v1alpha1.CloudProfile
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cp), &after)).To(Succeed())
	g.Expect(after.Spec.Type).To(Equal("other"))
	g.Expect(after.Generation).To(Equal(generation + 1))
	g.Expect(after.Status.Kubernetes).NotTo(BeNil())
	g.Expect(after.Status.Kubernetes.Versions[0].Classification).To(Equal(v1alpha1.ClassificationSupported))
}
