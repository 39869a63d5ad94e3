// Package statuspatch writes the status of the controllers' objects: the
// whole status in one request, through the status subresource, under one
// field manager, retried while the API server fails transiently. The
// request is an update (PUT) of the status subresource when the client can
// send one (NewClient) and the object has not changed since it was read,
// one JSON patch otherwise. The ProfileSync reconciler and the status
// reconcilers write through it.
package statuspatch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/profilesync/profilesync/controllers/transient"
)

// FieldManager is the field manager of every status write of the
// profile controllers. It differs from the sync's "profilesync" so that
// managedFields show who wrote what: the sync owns spec, these controllers own
// status.
const FieldManager = "profilesync-status"

// metadataOnly asks the API server to answer with the object's metadata
// (a PartialObjectMetadata), as client-go's metadata client does. An error is
// answered as a Status all the same: the API server keeps an error's code
// when it cannot serve the media type asked for.
const metadataOnly = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

// Client is a client whose status writes through Write are updates of the
// status subresource: the controller-runtime client it embeds, and a REST
// client of the same API server for each API group version written, which
// can ask for a metadata-only answer (controller-runtime's update cannot:
// it decodes the whole object into the one it sends). The manager's
// reconcilers get it from SetupAll.
type Client struct {
	client.Client
	config     *rest.Config
	httpClient *http.Client

	mu   sync.Mutex
	rest map[schema.GroupVersion]rest.Interface
}

// NewClient wraps c, a client of the API server at config, whose requests
// go through httpClient (the manager's, shared with c; nil makes one from
// config).
func NewClient(c client.Client, config *rest.Config, httpClient *http.Client) (*Client, error) {
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(config); err != nil {
			return nil, fmt.Errorf("status writes: HTTP client of %s: %w", config.Host, err)
		}
	}
	return &Client{Client: c, config: config, httpClient: httpClient, rest: map[schema.GroupVersion]rest.Interface{}}, nil
}

// restFor is the REST client of gvk's group version, made at its first use
// and kept.
func (c *Client) restFor(gvk schema.GroupVersionKind) (rest.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.rest[gvk.GroupVersion()]; ok {
		return r, nil
	}
	// The dynamic client's JSON settings (no protobuf, which custom
	// resources lack; the codecs go unused): the body is sent as bytes, and
	// only an error's Status is decoded.
	r, err := apiutil.RESTClientForGVK(gvk, true, true, c.config, serializer.CodecFactory{}, c.httpClient)
	if err != nil {
		return nil, fmt.Errorf("REST client of %s: %w", gvk.GroupVersion(), err)
	}
	c.rest[gvk.GroupVersion()] = r
	return r, nil
}

// Write writes status, a pointer to the status of after, through the status
// subresource as FieldManager, when after differs from before (the
// object as read at the start of the reconcile); otherwise it writes nothing.
//
// It is one request on purpose: fluxcd's patch helper writes conditions and
// the rest of status separately, so a reader could see Ready=True with a
// message about classifications that are not written yet, and every change
// would cost two writes. A profile deleted while it was reconciled needs no
// status.
//
// Through a Client (NewClient) the request is an update of the status
// subresource whose body holds only apiVersion, kind, the name, namespace
// and resourceVersion of after, and status: the API server's status strategy
// takes everything but status from the stored object, so there is no spec to
// send, and it decodes the body once, where a JSON patch costs it an encoding
// of the stored object to JSON, the patch parsed and applied and the result
// decoded (BenchmarkStatusWrite: 6 % less of kube-apiserver's CPU for a
// first status of a 600-version profile, 13 % less for a rewrite,
// docs/performance.md, "Status writes as updates"). The resourceVersion is
// after's: the object as read, or as the caller's own earlier write of it
// left it (an object without one is patched). An update of a custom resource
// needs one and is refused with a Conflict when the object changed since (the
// sync applied a new spec, a user annotated it); the write is then the JSON
// patch, which needs no lock: these controllers are the only writers of their
// objects' status (one worker per object), so the outcome is what the patch
// alone wrote before. Reading the object again to retry the update would cost
// more than the patch: a GET answers the whole object, status and spec. Any
// other client.Client (a fake one in tests) writes the JSON patch alone.
//
// The API server answers either request with the object's metadata only: no
// caller reads the answer, and the whole object would be the largest part of
// the write for both sides. A NamespacedCloudProfile's status holds its
// whole merged profile, so the API server would encode, and the manager
// decode, some 470 KB back for every status write of a 600-version profile
// (docs/performance.md, "A push"). after is left as the caller built it.
func Write(ctx context.Context, c client.Client, before, after client.Object, status any) error {
	if equality.Semantic.DeepEqual(before, after) {
		return nil
	}
	gvk, err := apiutil.GVKForObject(after, c.Scheme())
	if err != nil {
		return fmt.Errorf("write status of %s: %w", after.GetName(), err)
	}
	if updater, ok := c.(*Client); ok && after.GetResourceVersion() != "" {
		err = updater.update(ctx, gvk, after, status)
		if !apierrors.IsConflict(err) {
			return ignoreGone(after, "update", err)
		}
	}
	err = transient.Retry(func() error {
		// A fresh target at every try: a failed patch may have filled it.
		target := &metav1.PartialObjectMetadata{}
		target.SetGroupVersionKind(gvk)
		target.SetNamespace(after.GetNamespace())
		target.SetName(after.GetName())
		return c.Status().Patch(ctx, target, replaceStatus{status: status}, client.FieldOwner(FieldManager))
	})
	return ignoreGone(after, "patch", err)
}

// ignoreGone is err with what failed and on which object, nil when the
// object is gone.
func ignoreGone(obj client.Object, how string, err error) error {
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("%s status of %s: %w", how, client.ObjectKeyFromObject(obj), err)
}

// statusUpdate is the body of an update of the status subresource: what
// identifies the object and the version it was read at, and the status.
type statusUpdate struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   updateMetadata `json:"metadata"`
	Status     any            `json:"status"`
}

type updateMetadata struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace,omitempty"`
	ResourceVersion string `json:"resourceVersion"`
}

// update sends the status of obj as an update of its status subresource,
// retried while the API server fails transiently; a Conflict is returned at
// once, since the same resourceVersion would conflict again.
func (c *Client) update(ctx context.Context, gvk schema.GroupVersionKind, obj client.Object, status any) error {
	mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("resource of %s: %w", gvk, err)
	}
	restClient, err := c.restFor(gvk)
	if err != nil {
		return err
	}
	body, err := json.Marshal(statusUpdate{
		APIVersion: gvk.GroupVersion().String(),
		Kind:       gvk.Kind,
		Metadata:   updateMetadata{Name: obj.GetName(), Namespace: obj.GetNamespace(), ResourceVersion: obj.GetResourceVersion()},
		Status:     status,
	})
	if err != nil {
		return fmt.Errorf("encode the status of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	return transient.RetryWhile(retry.DefaultBackoff, retriableUpdate, func() error {
		return restClient.Put().
			NamespaceIfScoped(obj.GetNamespace(), namespaced).
			Resource(mapping.Resource.Resource).
			Name(obj.GetName()).
			SubResource("status").
			Param("fieldManager", FieldManager).
			SetHeader("Accept", metadataOnly).
			Body(body).
			Do(ctx).
			Error()
	})
}

// retriableUpdate is transient.Is but for a Conflict: an update's Conflict
// is a stale resourceVersion, not a passing failure.
func retriableUpdate(err error) bool { return transient.Is(err) && !apierrors.IsConflict(err) }

// replaceStatus is a JSON patch (RFC 6902) that sets the whole status in one
// "add" operation, which replaces a status that is there. A JSON merge patch
// of the difference costs the API server far more on large profiles: it
// serializes the stored object, merges, and walks the whole result to prune
// nulls, for every write; with a JSON patch it decodes only the top-level
// fields. A NamespacedCloudProfile's status holds its whole merged profile,
// so on a first sync of 10 CloudProfiles and 100 NamespacedCloudProfiles of
// 600 versions the merge patches took a quarter of the API server's CPU
// (docs/performance.md). Sending the whole status costs bytes on loopback or
// in the cluster network, not API-server work.
type replaceStatus struct{ status any }

func (p replaceStatus) Type() types.PatchType { return types.JSONPatchType }

func (p replaceStatus) Data(client.Object) ([]byte, error) {
	return json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": p.status}})
}
