package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/markdown"
	"github.com/profilesync/profilesync/internal/overlaypatch"
	"github.com/profilesync/profilesync/internal/render/merge"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/syncplan"
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
	// held are the live objects of the build under a hold of break glass,
	// in the report's order, found by bases.
	held []heldObject
	// refused are the lines of what the sync would refuse to write over the
	// live objects (checkNamespacedChange), found by bases.
	refused []string
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
func (s *clusterBase) parentLookup() profile.ParentLookup {
	return func(name string) (*v1alpha1.CloudProfileSpec, bool, error) {
		cp, err := s.live.cloudProfile(name)
		if err != nil || cp == nil {
			return nil, false, err
		}
		return &cp.Spec, true, nil
	}
}

// bases reads the live object of every profile of the heads; one that is not
// in the cluster is left out, so it shows as added. A live object under a
// hold is noted in s.held with the patch of its drift.
func (s *clusterBase) bases(heads sideSet, now time.Time, stderr io.Writer) (sideSet, error) {
	bases := make(sideSet, len(heads))
	for i, objects := range heads {
		for _, o := range objects {
			var live *profile.Object
			var err error
			if o.CloudProfile != nil {
				live, err = s.live.cloudProfileObject(o.Name())
			} else {
				live, err = s.live.namespacedObject(o.Namespace(), o.Name(), now, stderr)
			}
			if err != nil {
				return nil, err
			}
			if live == nil {
				continue
			}
			bases[i] = append(bases[i], *live)
			if o.NamespacedCloudProfile != nil {
				if err := s.checkNamespacedChange(o, *live, objects, now); err != nil {
					return nil, err
				}
			}
			held, err := s.heldDrift(o, *live, now, stderr)
			if err != nil {
				return nil, err
			}
			if held != nil {
				s.held = append(s.held, *held)
			}
		}
	}
	return bases, nil
}

// checkNamespacedChange notes what the sync would refuse in writing o, a
// NamespacedCloudProfile of the head, over live: the rule of Gardener's
// admission that needs the live object (merge.CheckNamespacedChange), which
// the sync checks before it writes, against the parent as the sync would
// have it (the head's, else the cluster's). Each line is the sync's.
func (s *clusterBase) checkNamespacedChange(o, live profile.Object, head []profile.Object, now time.Time) error {
	parentName := o.NamespacedCloudProfile.Spec.Parent.Name
	var parent *v1alpha1.CloudProfileSpec
	for _, h := range head {
		if h.CloudProfile != nil && h.Name() == parentName {
			parent = &h.CloudProfile.Spec
			break
		}
	}
	if parent == nil {
		cp, err := s.live.cloudProfile(parentName)
		if err != nil {
			return err
		}
		if cp != nil {
			parent = &cp.Spec
		}
	}
	for _, e := range merge.CheckNamespacedChange(live.NamespacedCloudProfile, parent, &o.NamespacedCloudProfile.Spec, now) {
		s.refused = append(s.refused, fmt.Sprintf("%s: %s: %s", o.File, o.Ref(), e.Error()))
	}
	return nil
}

// liveProfiles reads profiles from the cluster, each CloudProfile once.
type liveProfiles struct {
	ctx    context.Context
	reader client.Reader
	// cloudProfiles holds every CloudProfile read, nil for one that is not
	// there.
	cloudProfiles map[string]*v1alpha1.CloudProfile
	// honoured are the holds the sync honours, by object: every
	// ProfileSync's status.holds, read at the first held object; nil
	// until then.
	honoured map[v1alpha1.InventoryEntry]v1alpha1.ObjectHold
}

// honouredHold is the hold the sync's last plan honours on the object of
// entry, as its ProfileSync's status.holds lists it; false for none.
func (l *liveProfiles) honouredHold(entry v1alpha1.InventoryEntry) (v1alpha1.ObjectHold, bool, error) {
	if l.honoured == nil {
		var syncs v1alpha1.ProfileSyncList
		if err := l.reader.List(l.ctx, &syncs); err != nil {
			return v1alpha1.ObjectHold{}, false, fmt.Errorf("reading the ProfileSyncs, whose status.holds say which holds the sync honours "+
				"(list on profilesyncs, which the on-call role has): %w", err)
		}
		l.honoured = map[v1alpha1.InventoryEntry]v1alpha1.ObjectHold{}
		for _, sync := range syncs.Items {
			for _, h := range sync.Status.Holds {
				l.honoured[h.InventoryEntry] = h
			}
		}
	}
	h, ok := l.honoured[entry]
	return h, ok, nil
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

func (l *liveProfiles) cloudProfileObject(name string) (*profile.Object, error) {
	cp, err := l.cloudProfile(name)
	if err != nil || cp == nil {
		return nil, err
	}
	return &profile.Object{File: liveFile, CloudProfile: cp.DeepCopy()}, nil
}

// namespacedObject reads a NamespacedCloudProfile and merges it with its
// live parent at now, as the controller does. When it cannot be merged, the
// controller keeps the status.cloudProfileSpec it had, and so it is compared
// by that, with a warning.
func (l *liveProfiles) namespacedObject(namespace, name string, now time.Time, stderr io.Writer) (*profile.Object, error) {
	ncp := &v1alpha1.NamespacedCloudProfile{}
	ncp.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.NamespacedCloudProfileKind))
	found, err := l.get(client.ObjectKey{Namespace: namespace, Name: name}, ncp)
	if err != nil || !found {
		return nil, err
	}
	object := &profile.Object{File: liveFile, NamespacedCloudProfile: ncp}
	parent, err := l.cloudProfile(ncp.Spec.Parent.Name)
	if err != nil {
		return nil, err
	}
	var why string
	if parent == nil {
		why = fmt.Sprintf("its parent CloudProfile %q is not in the cluster", ncp.Spec.Parent.Name)
	} else if status, errs := profile.NamespacedStatus(&parent.Spec, &ncp.Spec, now); len(errs) > 0 {
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

// heldObject is a live object under a hold of break glass, and the patch
// that makes its overlay build what the cluster holds.
type heldObject struct {
	ref  string
	hold v1alpha1.Hold
	// patch is the strategic-merge patch as YAML; nil when the overlay
	// already builds the live spec.
	patch []byte
	// recorded are the fields the hold waits on (status.holds[].driftedFields);
	// caughtUp: the overlay has them all, so the next sync releases the hold
	// (syncplan.CatchUp, the sync's own decision).
	recorded []string
	caughtUp bool
}

// anyHold lets diff --cluster read a hold of any length: the bound is the
// manager's --max-hold, which the command does not know, and a hold the
// admission webhook or the sync admitted is worth showing whatever it is.
const anyHold = time.Duration(math.MaxInt64)

// heldDrift returns the hold of the live object of built, with the patch of
// its drift, or nil when it is not held. Whether it is held is the sync's
// decision, as its plan recorded it in the owning ProfileSync's
// status.holds, and whether the next sync ends it is the plan's rule
// (syncplan.CatchUp) on the fields recorded there. A hold the sync does not
// honour (one that cannot be parsed or has expired, or one status.holds
// does not list with this expiry: the sync refused it) is a warning on
// stderr: the sync corrects that object. Both specs are compared as the
// API server stores them (syncplan.AsStored), as the sync compares them.
func (s *clusterBase) heldDrift(built, live profile.Object, now time.Time, stderr io.Writer) (*heldObject, error) {
	built = syncplan.AsStored(built)
	liveMeta, builtSpec, liveSpec := specsOf(built, live)
	hold, err := v1alpha1.ParseHold(liveMeta.GetAnnotations(), now, anyHold)
	if err != nil {
		fmt.Fprintf(stderr, "warning: %s: %s: the sync does not honour this hold: %v\n", liveFile, live.Ref(), err)
		return nil, nil
	}
	if hold == nil {
		return nil, nil
	}
	honoured, ok, err := s.live.honouredHold(syncplan.EntryOf(live))
	if err != nil {
		return nil, err
	}
	if !ok || !honoured.Until.Time.Equal(hold.Until) {
		// The sync's plan lists no hold it refused, for example one
		// further ahead than its --max-hold, which this command does not
		// know: that object is corrected, not held.
		fmt.Fprintf(stderr, "warning: %s: %s: the sync does not honour this hold: its ProfileSync's status.holds does not list it "+
			"(refused, see the HoldRefused event of its ProfileSync, or not judged yet): the sync puts Git's fields back\n", liveFile, live.Ref())
		return nil, nil
	}
	builtValues, err := runtime.DefaultUnstructuredConverter.ToUnstructured(builtSpec)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the spec: %w", built.Ref(), err)
	}
	liveValues, err := runtime.DefaultUnstructuredConverter.ToUnstructured(liveSpec)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: reading the spec: %w", liveFile, live.Ref(), err)
	}
	patch, changed, err := overlaypatch.Patch(
		overlaypatch.Object{Kind: built.Kind(), Namespace: built.Namespace(), Name: built.Name(), Spec: builtValues},
		overlaypatch.Object{Kind: live.Kind(), Namespace: live.Namespace(), Name: live.Name(), Spec: liveValues})
	if err != nil {
		return nil, fmt.Errorf("%s: the patch of its drift: %w", live.Ref(), err)
	}
	held := &heldObject{ref: live.Ref(), hold: *hold, recorded: honoured.DriftedFields}
	if _, held.caughtUp, err = syncplan.CatchUp(built, liveMeta, honoured.DriftedFields); err != nil {
		return nil, fmt.Errorf("%s: %w", live.Ref(), err)
	}
	if changed {
		if held.patch, err = overlaypatch.YAML(patch); err != nil {
			return nil, fmt.Errorf("%s: %w", live.Ref(), err)
		}
	}
	return held, nil
}

// ending says, on one line, what the next sync does with a held object:
// release it (Git has caught up) or keep holding; empty when the patch says
// it all.
func (h heldObject) ending() string {
	switch {
	case h.caughtUp && h.patch == nil:
		return "The overlay already builds what the cluster holds: the hold ends at the next sync."
	case h.caughtUp:
		return "The overlay already builds every field the hold waits on: the hold ends at the next sync, which writes the rest of this patch's fields back."
	case len(h.recorded) == 0:
		return "Nothing has drifted under this hold yet: it holds any edit until it expires or is removed, whatever the overlay builds."
	}
	return ""
}

// specsOf returns the live object's metadata and both specs, as written: a
// namespaced profile's own spec, not the merge with its parent.
func specsOf(built, live profile.Object) (liveMeta metav1.Object, builtSpec, liveSpec any) {
	if live.CloudProfile != nil {
		return live.CloudProfile, &built.CloudProfile.Spec, &live.CloudProfile.Spec
	}
	return live.NamespacedCloudProfile, &built.NamespacedCloudProfile.Spec, &live.NamespacedCloudProfile.Spec
}

// writeAfterReport writes the patch of every held object after the report
// (writeHeld), then what the sync would refuse to write over the live
// objects, on stderr, one line each as the sync reports it; the command then
// fails, since the sync would write nothing of the revision.
func (s *clusterBase) writeAfterReport(stdout, stderr io.Writer, format diffFormat) error {
	if err := s.writeHeld(stdout, stderr, format); err != nil {
		return err
	}
	if len(s.refused) == 0 {
		return nil
	}
	for _, line := range s.refused {
		if _, err := fmt.Fprintln(stderr, line); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintln(stderr, "the sync refuses this revision for the rules above, which need the live objects, and writes none of it"); err != nil {
		return err
	}
	return errInvalidInputReported
}

// writeHeld writes the patch of every held object after the report,
// in a YAML stream (table) or a YAML block per object (markdown), for a
// platform engineer to add to the overlay. JSON output stays the report
// alone, so a note on stderr says that objects are held.
func (s *clusterBase) writeHeld(stdout, stderr io.Writer, format diffFormat) error {
	if len(s.held) == 0 {
		return nil
	}
	const intro = "Held in the cluster: an emergency edit held against the sync (profilesync.io/hold-until) until Git catches up. " +
		"Add each patch to the overlay, as a file named under patches: in its kustomization.yaml, and merge it: " +
		"the hold ends by itself once the overlay builds what the cluster holds."
	var b strings.Builder
	switch format {
	case diffFormatJSON:
		refs := make([]string, len(s.held))
		for i, h := range s.held {
			refs[i] = h.ref
		}
		_, err := fmt.Fprintf(stderr, "note: held in the cluster: %s; -o table or -o markdown shows the patch that brings the overlay to each\n", strings.Join(refs, ", "))
		return err
	case diffFormatMarkdown:
		b.WriteString("\n### Held in the cluster\n\n" + intro + "\n")
		for _, h := range s.held {
			// The reference, the reason and the patch come from the cluster
			// and the repository: escaped, so none can make markup, HTML or
			// a mention, or close the YAML block.
			b.WriteString("\n#### " + markdown.Text(h.ref) + "\n\n" + markdown.Text(holdLine(h)) + "\n\n")
			if ending := h.ending(); ending != "" {
				b.WriteString(ending + "\n")
			}
			if h.patch != nil {
				b.WriteString(markdown.CodeBlock("yaml", string(h.patch)))
			}
		}
	default:
		b.WriteString("\n" + intro + "\n\n")
		for _, h := range s.held {
			b.WriteString("---\n# " + h.ref + ": " + holdLine(h) + "\n")
			if ending := h.ending(); ending != "" {
				b.WriteString("# " + ending + "\n")
			}
			if h.patch != nil {
				b.WriteString(string(h.patch))
			}
		}
	}
	_, err := io.WriteString(stdout, b.String())
	return err
}

// holdLine says until when an object is held, and why, on one line.
func holdLine(h heldObject) string {
	line := "held until " + h.hold.Until.UTC().Format(time.RFC3339)
	if reason := strings.Join(strings.Fields(h.hold.Reason), " "); reason != "" {
		line += " (" + reason + ")"
	}
	return line
}
