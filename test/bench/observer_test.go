package bench

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// observer is the benchmark's view of a control plane: an informer cache of
// the profiles and the sync object. Waits re-evaluate their conditions at
// every watch event, so a time taken is when the change reached a watch.
type observer struct {
	cache   cache.Cache
	changed chan struct{}
	cancel  context.CancelFunc
}

func newObserver(env *testenv.Env, objects ...client.Object) (*observer, error) {
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{cache: c, changed: make(chan struct{}, 1), cancel: cancel}
	notify := func() {
		select {
		case o.changed <- struct{}{}:
		default:
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	for _, obj := range objects {
		informer, err := c.GetInformer(ctx, obj)
		if err != nil {
			cancel()
			return nil, err
		}
		if _, err := informer.AddEventHandler(handler); err != nil {
			cancel()
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		return nil, errors.New("the watches did not sync")
	}
	return o, nil
}

// waitAll waits until every condition has held once and returns when each
// first did.
func (o *observer) waitAll(b *testing.B, conditions map[string]func() bool, timeout time.Duration) map[string]time.Time {
	reached := map[string]time.Time{}
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		now := time.Now()
		for name, holds := range conditions {
			if _, ok := reached[name]; !ok && holds() {
				reached[name] = now
			}
		}
		if len(reached) == len(conditions) {
			return reached
		}
		select {
		case <-o.changed:
		case <-tick.C:
		case <-deadline:
			var missing []string
			for name := range conditions {
				if _, ok := reached[name]; !ok {
					missing = append(missing, name)
				}
			}
			sort.Strings(missing)
			b.Fatalf("not reached within %s: %s", timeout, strings.Join(missing, ", "))
		}
	}
}

// counts is how many profiles exist, or with ready how many are Ready for
// their generation.
func (o *observer) counts(ready bool) int {
	ctx := context.Background()
	var cps v1alpha1.CloudProfileList
	var ncps v1alpha1.NamespacedCloudProfileList
	if o.cache.List(ctx, &cps, client.UnsafeDisableDeepCopy) != nil || o.cache.List(ctx, &ncps, client.UnsafeDisableDeepCopy) != nil {
		return 0
	}
	if !ready {
		return len(cps.Items) + len(ncps.Items)
	}
	n := 0
	for i := range cps.Items {
		if isReady(&cps.Items[i], cps.Items[i].Status.ObservedGeneration) {
			n++
		}
	}
	for i := range ncps.Items {
		if isReady(&ncps.Items[i], ncps.Items[i].Status.ObservedGeneration) {
			n++
		}
	}
	return n
}

// expiry is the expiry of the pushed version of a CloudProfile: as its spec
// says, or with status as its Ready status's next transition says.
func (o *observer) expiry(name string, status bool) time.Time {
	var cps v1alpha1.CloudProfileList
	if o.cache.List(context.Background(), &cps, client.UnsafeDisableDeepCopy) != nil {
		return time.Time{}
	}
	for i := range cps.Items {
		cp := &cps.Items[i]
		if cp.Name != name || len(cp.Spec.Kubernetes.Versions) <= pushedVersion {
			continue
		}
		if status {
			if !isReady(cp, cp.Status.ObservedGeneration) || cp.Status.Kubernetes == nil || len(cp.Status.Kubernetes.Versions) <= pushedVersion {
				return time.Time{}
			}
			if next := cp.Status.Kubernetes.Versions[pushedVersion].NextTransitionTime; next != nil {
				return next.Time
			}
			return time.Time{}
		}
		for _, stage := range cp.Spec.Kubernetes.Versions[pushedVersion].Lifecycle {
			if stage.Classification == v1alpha1.ClassificationExpired && stage.StartTime != nil {
				return stage.StartTime.Time
			}
		}
	}
	return time.Time{}
}

// kustomization is the Flux Kustomization, or nil.
func (o *observer) kustomization() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kustomizationGVK)
	if o.cache.Get(context.Background(), client.ObjectKey{Namespace: fluxNamespace, Name: "landscape"}, u) != nil {
		return nil
	}
	return u
}
