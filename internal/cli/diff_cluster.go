package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render"
)

// clusterRequestTimeout bounds each request to the cluster when the
// kubeconfig sets no timeout, so that an unreachable cluster fails the
// command instead of hanging a pull-request check.
const clusterRequestTimeout = 30 * time.Second

// clusterBase is diff --cluster's base: the live objects of the cluster.
// The head is one overlay of a tree.
type clusterBase struct {
	kubeconfig, kubeContext string
	live                    *liveProfiles
}

func newClusterSides(ctx context.Context, opts *diffOptions) (*diffSides, error) {
	headDir := opts.headDir
	if headDir == "" {
		headDir = "."
	}
	head, err := dirTree(headDir, "--head-dir")
	if err != nil {
		return nil, err
	}
	// The base is labelled "cluster", with the context when one was chosen.
	base := "cluster"
	if opts.kubeContext != "" {
		base = fmt.Sprintf("cluster (context %s)", opts.kubeContext)
	}
	return &diffSides{head: head, display: headDir, base: diffTree{label: base}, cluster: &clusterBase{
		kubeconfig: opts.kubeconfig, kubeContext: opts.kubeContext,
		live: &liveProfiles{ctx: ctx, cloudProfiles: make(map[string]*v1alpha1.CloudProfile)},
	}}, nil
}

// prepare refuses more than one overlay and makes the client of the
// cluster, once the command line is known to be right.
func (s *clusterBase) prepare(landscapes []landscape) error {
	if len(landscapes) > 1 {
		return usageErrorf("--cluster compares one overlay with the cluster; name one of %s", joinPaths(landscapes))
	}
	restConfig, err := clusterConfig(s.kubeconfig, s.kubeContext)
	if err != nil {
		return err
	}
	c, err := client.New(restConfig, client.Options{Scheme: newScheme()})
	if err != nil {
		return fmt.Errorf("connecting to the cluster: %w", err)
	}
	s.live.reader = c
	return nil
}

// clusterConfig loads the kubeconfig: the file given, else as
// controller-runtime finds it ($KUBECONFIG, in-cluster, ~/.kube/config).
func clusterConfig(kubeconfig, kubeContext string) (*rest.Config, error) {
	var restConfig *rest.Config
	var err error
	if kubeconfig != "" {
		restConfig, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: kubeContext},
		).ClientConfig()
	} else {
		restConfig, err = config.GetConfigWithContext(kubeContext)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if restConfig.Timeout == 0 {
		restConfig.Timeout = clusterRequestTimeout
	}
	return restConfig, nil
}

// parentLookup reads a parent the build lacks from the cluster, as the sync
// does.
func (s *clusterBase) parentLookup() render.ParentLookup {
	return func(name string) (*v1alpha1.CloudProfileSpec, bool, error) {
		cp, err := s.live.cloudProfile(name)
		if err != nil || cp == nil {
			return nil, false, err
		}
		return &cp.Spec, true, nil
	}
}

// bases reads the live object of every profile of the heads; one that is not
// in the cluster is left out, so it shows as added.
func (s *clusterBase) bases(heads sideSet, now time.Time, stderr io.Writer) (sideSet, error) {
	bases := make(sideSet, len(heads))
	for i, objects := range heads {
		for _, o := range objects {
			var live *render.Object
			var err error
			if o.CloudProfile != nil {
				live, err = s.live.cloudProfileObject(o.Name())
			} else {
				live, err = s.live.namespacedObject(o.Namespace(), o.Name(), now, stderr)
			}
			if err != nil {
				return nil, err
			}
			if live != nil {
				bases[i] = append(bases[i], *live)
			}
		}
	}
	return bases, nil
}

// liveProfiles reads profiles from the cluster, each CloudProfile once.
type liveProfiles struct {
	ctx    context.Context
	reader client.Reader
	// cloudProfiles holds every CloudProfile read, nil for one that is not
	// there.
	cloudProfiles map[string]*v1alpha1.CloudProfile
}

// liveFile is what problems and warnings name as the file of a live object.
const liveFile = "cluster"

// get reads one object; found is false when it is not there.
func (l *liveProfiles) get(key client.ObjectKey, obj client.Object) (found bool, err error) {
	err = l.reader.Get(l.ctx, key, obj)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	case meta.IsNoMatchError(err):
		return false, fmt.Errorf("reading the cluster: it has no %s API; is ProfileSync installed? (%w)", obj.GetObjectKind().GroupVersionKind().Kind, err)
	}
	return false, fmt.Errorf("reading the cluster: %w", err)
}

func (l *liveProfiles) cloudProfile(name string) (*v1alpha1.CloudProfile, error) {
	if cp, seen := l.cloudProfiles[name]; seen {
		return cp, nil
	}
	cp := &v1alpha1.CloudProfile{}
	cp.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.CloudProfileKind))
	found, err := l.get(client.ObjectKey{Name: name}, cp)
	if err != nil {
		return nil, err
	}
	if !found {
		cp = nil
	}
	l.cloudProfiles[name] = cp
	return cp, nil
}

func (l *liveProfiles) cloudProfileObject(name string) (*render.Object, error) {
	cp, err := l.cloudProfile(name)
	if err != nil || cp == nil {
		return nil, err
	}
	return &render.Object{File: liveFile, CloudProfile: cp.DeepCopy()}, nil
}

// namespacedObject reads a NamespacedCloudProfile and merges it with its
// live parent at now, as the controller does. When it cannot be merged, the
// controller keeps the status.cloudProfileSpec it had, and so it is compared
// by that, with a warning.
func (l *liveProfiles) namespacedObject(namespace, name string, now time.Time, stderr io.Writer) (*render.Object, error) {
	ncp := &v1alpha1.NamespacedCloudProfile{}
	ncp.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.NamespacedCloudProfileKind))
	found, err := l.get(client.ObjectKey{Namespace: namespace, Name: name}, ncp)
	if err != nil || !found {
		return nil, err
	}
	object := &render.Object{File: liveFile, NamespacedCloudProfile: ncp}
	parent, err := l.cloudProfile(ncp.Spec.Parent.Name)
	if err != nil {
		return nil, err
	}
	var why string
	if parent == nil {
		why = fmt.Sprintf("its parent CloudProfile %q is not in the cluster", ncp.Spec.Parent.Name)
	} else if status, errs := render.NamespacedStatus(&parent.Spec, &ncp.Spec, now); len(errs) > 0 {
		why = fmt.Sprintf("it cannot be merged with its live parent CloudProfile %q (%v)", ncp.Spec.Parent.Name, errs.ToAggregate())
	} else {
		ncp.Status.CloudProfileSpec = status.CloudProfileSpec
		ncp.Status.ProfileVersionsStatus = status.ProfileVersionsStatus
		return object, nil
	}
	kept := "compared by the status.cloudProfileSpec it has"
	if ncp.Status.CloudProfileSpec == nil {
		kept = "it has no status.cloudProfileSpec, so it is compared as empty"
	}
	fmt.Fprintf(stderr, "warning: %s: %s: %s; %s\n", liveFile, object.Ref(), why, kept)
	return object, nil
}
