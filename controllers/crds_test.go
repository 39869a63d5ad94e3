package controllers

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// fakeDiscovery serves the resources a test sets, or fails with err.
type fakeDiscovery struct {
	mu        sync.Mutex
	resources []metav1.APIResource
	err       error
}

func (d *fakeDiscovery) serve(err error, resources ...metav1.APIResource) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.resources, d.err = resources, err
}

func (d *fakeDiscovery) ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	if groupVersion != v1alpha1.GroupVersion.String() || len(d.resources) == 0 {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, "")
	}
	return &metav1.APIResourceList{GroupVersion: groupVersion, APIResources: d.resources}, nil
}

var (
	cloudProfiles      = metav1.APIResource{Name: "cloudprofiles", Kind: v1alpha1.CloudProfileKind}
	cloudProfileStatus = metav1.APIResource{Name: "cloudprofiles/status", Kind: v1alpha1.CloudProfileKind}
	namespacedProfiles = metav1.APIResource{Name: "namespacedcloudprofiles", Namespaced: true, Kind: v1alpha1.NamespacedCloudProfileKind}
	profileSyncs       = metav1.APIResource{Name: "profilesyncs", Namespaced: true, Kind: v1alpha1.ProfileSyncKind}
	versionUpdates     = metav1.APIResource{Name: "versionupdates", Namespaced: true, Kind: v1alpha1.VersionUpdateKind}
)

// gateUnderTest is a CRDGate polling every millisecond, its log and its
// setup calls.
type gateUnderTest struct {
	*CRDGate
	discovery *fakeDiscovery
	setups    atomic.Int32
	mu        sync.Mutex
	log       []string
	done      chan error
	cancel    context.CancelFunc
}

func startGate(t *testing.T, setupErr error) *gateUnderTest {
	t.Helper()
	g := &gateUnderTest{discovery: &fakeDiscovery{}, done: make(chan error, 1)}
	g.CRDGate = &CRDGate{
		Discovery: g.discovery,
		Setup: func(context.Context) error {
			g.setups.Add(1)
			return setupErr
		},
		Log: funcr.New(func(prefix, args string) {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.log = append(g.log, args)
		}, funcr.Options{}),
		Backoff: wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: math.MaxInt32},
	}
	NewWithT(t).Expect(g.Check(nil)).To(MatchError(ContainSubstring("checking whether the API server serves the CustomResourceDefinitions")))
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	t.Cleanup(cancel)
	go func() { g.done <- g.Start(ctx) }()
	return g
}

func (g *gateUnderTest) logged() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.log...)
}

func (g *gateUnderTest) checkError() string {
	if err := g.Check(nil); err != nil {
		return err.Error()
	}
	return ""
}

func TestRequiredKindsAreTheKindsOfConfigCRD(t *testing.T) {
	g := NewWithT(t)
	required, err := RequiredKinds()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(required).To(HaveLen(1))
	g.Expect(required[v1alpha1.GroupVersion]).To(ConsistOf(v1alpha1.CloudProfileKind, v1alpha1.NamespacedCloudProfileKind, v1alpha1.ProfileSyncKind, v1alpha1.VersionUpdateKind))
}

// The gate stays closed, naming what is missing, until every kind is
// served (a status subresource alone does not count), then sets up once.
func TestCRDGateWaitsForEveryKindThenSetsUpOnce(t *testing.T) {
	g := NewWithT(t)
	gate := startGate(t, nil)

	g.Eventually(gate.checkError).Should(Equal("the API server does not serve core.profilesync.io/v1alpha1 CloudProfile, NamespacedCloudProfile, ProfileSync, VersionUpdate: " +
		"install their CustomResourceDefinitions (config/crd)"))
	g.Expect(gate.setups.Load()).To(BeZero())

	gate.discovery.serve(nil, profileSyncs, versionUpdates, cloudProfileStatus)
	g.Eventually(gate.checkError).Should(HavePrefix("the API server does not serve core.profilesync.io/v1alpha1 CloudProfile, NamespacedCloudProfile: "))
	g.Consistently(gate.setups.Load).WithTimeout(50 * time.Millisecond).Should(BeZero())

	gate.discovery.serve(nil, profileSyncs, versionUpdates, cloudProfiles, cloudProfileStatus, namespacedProfiles)
	g.Eventually(gate.done).Should(Receive(BeNil()))
	g.Expect(gate.Check(nil)).To(Succeed())
	g.Expect(gate.setups.Load()).To(Equal(int32(1)))

	log := gate.logged()
	g.Expect(log[0]).To(ContainSubstring(`"msg"="waiting for the CustomResourceDefinitions; the controllers start as soon as the API server serves them"`))
	g.Expect(log[0]).To(ContainSubstring(`core.profilesync.io/v1alpha1 CloudProfile, NamespacedCloudProfile, ProfileSync, VersionUpdate`))
	g.Expect(log[0]).To(ContainSubstring(`"install"="kubectl apply --server-side -k config/crd"`))
	g.Expect(log).To(ContainElement(ContainSubstring(`core.profilesync.io/v1alpha1 CloudProfile, NamespacedCloudProfile: `)), "a change of what is missing is logged")
	g.Expect(log[len(log)-1]).To(ContainSubstring("starting the controllers"))
}

// An API server that cannot answer keeps the gate closed, saying so; the
// gate keeps asking.
func TestCRDGateKeepsAskingWhenDiscoveryFails(t *testing.T) {
	g := NewWithT(t)
	gate := startGate(t, nil)
	gate.discovery.serve(apierrors.NewServiceUnavailable("etcd is down"))
	g.Eventually(gate.checkError).Should(Equal("cannot tell whether the API server serves core.profilesync.io/v1alpha1: etcd is down"))
	gate.discovery.serve(nil, profileSyncs, versionUpdates, cloudProfiles, namespacedProfiles)
	g.Eventually(gate.done).Should(Receive(BeNil()))
	g.Expect(gate.Check(nil)).To(Succeed())
}

// A setup that fails stops the manager (Start returns the error) and the
// gate stays not ready.
func TestCRDGateReportsAFailedSetup(t *testing.T) {
	g := NewWithT(t)
	gate := startGate(t, errors.New("listen tcp :9292: address already in use"))
	gate.discovery.serve(nil, profileSyncs, versionUpdates, cloudProfiles, namespacedProfiles)
	var err error
	g.Eventually(gate.done).Should(Receive(&err))
	g.Expect(err).To(MatchError("set up the controllers: listen tcp :9292: address already in use"))
	g.Expect(gate.Check(nil)).To(MatchError(err))
}

// A manager stopped while the gate waits stops cleanly, with nothing set up.
func TestCRDGateStopsWithTheManager(t *testing.T) {
	g := NewWithT(t)
	gate := startGate(t, nil)
	g.Eventually(gate.checkError).Should(ContainSubstring("does not serve"))
	gate.cancel()
	g.Eventually(gate.done).Should(Receive(BeNil()))
	g.Expect(gate.setups.Load()).To(BeZero())
	g.Expect(gate.Check(nil)).To(HaveOccurred())
}

// The compiled-in mapping is what the API server serves once the CRDs are
// installed: resource names and scopes of config/crd.
func TestCompiledRESTMapperMapsTheKindsOfConfigCRD(t *testing.T) {
	g := NewWithT(t)
	mapper, err := compiledRESTMapper()
	g.Expect(err).NotTo(HaveOccurred())
	for kind, want := range map[string]struct {
		resource string
		scope    meta.RESTScopeName
	}{
		v1alpha1.CloudProfileKind:           {"cloudprofiles", meta.RESTScopeNameRoot},
		v1alpha1.NamespacedCloudProfileKind: {"namespacedcloudprofiles", meta.RESTScopeNameNamespace},
		v1alpha1.ProfileSyncKind:            {"profilesyncs", meta.RESTScopeNameNamespace},
		v1alpha1.VersionUpdateKind:          {"versionupdates", meta.RESTScopeNameNamespace},
	} {
		mapping, err := mapper.RESTMapping(v1alpha1.GroupVersion.WithKind(kind).GroupKind(), v1alpha1.GroupVersion.Version)
		g.Expect(err).NotTo(HaveOccurred(), kind)
		g.Expect(mapping.Resource).To(Equal(v1alpha1.GroupVersion.WithResource(want.resource)), kind)
		g.Expect(mapping.Scope.Name()).To(Equal(want.scope), kind)
	}
}
