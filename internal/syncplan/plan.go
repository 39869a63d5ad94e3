// Package syncplan decides what one sync of a ProfileSync does, before it
// does anything: which objects it writes and in what order, which holds of
// break glass it honours, refuses or ends, what it prunes, what its
// inventory becomes, what drifted, and what it reports. It takes plain
// values (the revision's objects, the live objects, the inventories, the
// holds, the drift mode, the time) and returns one Plan; it has no
// Kubernetes client. The reconciler fetches, asks for the plan, executes it
// in its order and reports it; `profilesync diff --cluster` compares as the
// plan does (AsStored, DriftedFields), and the profiles' Held Until column
// shows the holds the plan honours (status.holds).
package syncplan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/merge"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// Input is everything a sync knows when it plans.
type Input struct {
	// Sync names the ProfileSync.
	Sync types.NamespacedName
	// Revision is the commit Objects were built from; LastAppliedRevision
	// is the ProfileSync's status.lastAppliedRevision.
	Revision, LastAppliedRevision string
	// Objects are the revision's objects, validated as a set already;
	// Digests[i] is profile.ContentDigest of Objects[i].
	Objects []profile.Object
	Digests []string
	// Live is what the cluster holds.
	Live Live
	// Inventory is the ProfileSync's status.inventory.
	Inventory []v1alpha1.InventoryEntry
	// Claims are the inventories of every ProfileSync (ClaimsOf).
	Claims Claims
	// PreviousHolds are the ProfileSync's status.holds: the holds the last
	// sync that judged them honoured.
	PreviousHolds []v1alpha1.ObjectHold
	// Prune is spec.prune.
	Prune bool
	// DriftMode is spec.driftDetection.mode.
	DriftMode v1alpha1.DriftDetectionMode
	// LandscapeNamespace is --cluster-profiles-namespace: its ProfileSyncs
	// are the landscape's.
	LandscapeNamespace string
	// Now is the sync's clock; MaxHold is --max-hold (zero:
	// v1alpha1.DefaultMaxHold).
	Now     time.Time
	MaxHold time.Duration
	// UpToDate is the Plan.UpToDate of the ProfileSync's last plan: the
	// objects it compared and found up to date, each at the live
	// resourceVersion and applied digest it compared. Nil compares every
	// object.
	UpToDate UpToDate
}

// UpToDate are objects a plan found up to date (its live object lacks
// nothing of Git), each with what made that answer: the live object's
// resourceVersion and the digest of Git's object, which its applied-digest
// annotation holds. The answer depends on nothing else (the owner labels are
// the ProfileSync's), so the next plan takes it without comparing again
// while both stand: any write to the live object, a hand edit included,
// changes its resourceVersion, and a change in Git changes the digest.
type UpToDate map[v1alpha1.InventoryEntry]Compared

// Compared is what an up-to-date answer was given for.
type Compared struct {
	ResourceVersion string
	Digest          string
}

// stands tells whether u holds the answer for e at live and digest.
func (u UpToDate) stands(e v1alpha1.InventoryEntry, live metav1.Object, digest string) bool {
	compared, ok := u[e]
	return ok && compared.ResourceVersion != "" && compared.ResourceVersion == live.GetResourceVersion() && compared.Digest == digest
}

// Live is what the cluster holds, read once per sync.
type Live struct {
	CloudProfiles map[string]*v1alpha1.CloudProfile
	Namespaced    map[types.NamespacedName]*v1alpha1.NamespacedCloudProfile
}

// Object is the live object of an inventory entry, nil when there is none.
func (l Live) Object(e v1alpha1.InventoryEntry) metav1.Object {
	if e.Kind == v1alpha1.CloudProfileKind {
		if cp, ok := l.CloudProfiles[e.Name]; ok {
			return cp
		}
		return nil
	}
	if ncp, ok := l.Namespaced[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}]; ok {
		return ncp
	}
	return nil
}

// Stage orders the writes of a revision so that each one is valid for the
// admission webhooks when it is made.
type Stage int

const (
	// StageValidNow: namespaced profiles valid against their parent as it
	// is on the cluster. They go first, so an override the revision drops is
	// gone before its parent loses what it overrode.
	StageValidNow Stage = iota
	// StageParents: CloudProfiles.
	StageParents
	// StageNeedsNewParent: namespaced profiles valid only against their
	// parent as this revision has it (a new parent, or an override of
	// something the parent gains).
	StageNeedsNewParent
)

// Write is one object the plan writes, when, and why.
type Write struct {
	Entry  v1alpha1.InventoryEntry
	Object profile.Object
	// Desired is what is server-side applied (DesiredObject), with Git's
	// content digest in v1alpha1.AppliedDigestAnnotation.
	Desired *unstructured.Unstructured
	// Create: the object is not on the cluster.
	Create bool
	// Fields are, for a live object, the fields of Git it lacks.
	Fields []string
	Stage  Stage
}

// RefusalKind is why a plan refuses its revision.
type RefusalKind int

const (
	// AccessDenied: tenancy or ownership (an object another ProfileSync of
	// equal or higher rank lists).
	AccessDenied RefusalKind = iota + 1
	// UpdateRulesBroken: a change or prune of a CloudProfile, or a change of
	// a NamespacedCloudProfile, that the admission webhook refuses too
	// (merge.CheckCloudProfileChange, merge.CheckNamespacedChange).
	UpdateRulesBroken
)

// Refusal is why a plan writes nothing: every problem, each naming its
// file and object.
type Refusal struct {
	Kind     RefusalKind
	Problems []string
}

func (r *Refusal) Error() string { return strings.Join(r.Problems, "; ") }

// Drift is an object that differs from Git on fields Git sets while Git did
// not change it, left in place under driftDetection mode warn.
type Drift struct {
	Ref    string
	Fields []string
}

func (d Drift) String() string { return fmt.Sprintf("%s: %s", d.Ref, FieldList(d.Fields)) }

// Plan is what one sync does, decided in full before its first write. The
// reconciler executes it in this order: Claim (before the first write),
// Writes stage by stage, Releases, Prunes; and only when Refusal is nil.
type Plan struct {
	// Refusal, when set, refuses the revision: Writes, Releases and Prunes
	// are empty, and nothing is written.
	Refusal *Refusal

	// Writes are the objects to write, in stage order.
	Writes []Write
	// Claim is the inventory to record before the first write: the
	// retained inventory plus every object written that it lacks; nil when
	// it lacks none.
	Claim []v1alpha1.InventoryEntry
	// Releases are the holds that end, removed after the writes.
	Releases []Release
	// Prunes are the objects to delete, namespaced profiles first.
	Prunes []v1alpha1.InventoryEntry

	// LostClaims are the entries of the inventory a landscape's ProfileSync
	// took over; RetainedInventory is the inventory without them, the
	// ProfileSync's inventory whatever the plan's execution does.
	LostClaims        []v1alpha1.InventoryEntry
	RetainedInventory []v1alpha1.InventoryEntry
	// Inventory is the inventory once the plan is executed: the revision's
	// objects and the held objects it dropped, sorted.
	Inventory []v1alpha1.InventoryEntry
	// Outranked are the tenants' ProfileSyncs whose claims the landscape's
	// ProfileSync takes over.
	Outranked []types.NamespacedName

	// HoldsJudged: the plan judged the holds (it was not refused for
	// access first); Holds and HeldCondition are then its decision.
	HoldsJudged bool
	// Holds are the holds honoured, sorted: status.holds once executed.
	Holds []v1alpha1.ObjectHold
	// RefusedHolds and IgnoredHolds: the object's reference and why.
	RefusedHolds, IgnoredHolds []string
	refusedHolds               []string
	waiting                    map[v1alpha1.InventoryEntry][]string
	// standingEnds are the holds a refused plan keeps standing although
	// they end (Release.Reason), until a plan that passes releases them.
	standingEnds map[v1alpha1.InventoryEntry]string

	// DriftJudged: the plan compared the objects it does not write
	// (it was not refused); Drifts are then the drift left in place.
	DriftJudged bool
	Drifts      []Drift
	// UpToDate are the objects the plan found up to date, compared now or
	// taken from Input.UpToDate: the next plan's Input.UpToDate.
	UpToDate UpToDate

	// Events are reported when the plan is made, each on its Topic
	// (Topics lists every line of each, to remember).
	Events []Event
	Topics map[string][]string
	// Applied are reported once the writes are made.
	Applied []Event
}

// held tells whether the plan holds the object of e.
func (p *Plan) held(e v1alpha1.InventoryEntry) bool {
	for _, h := range p.Holds {
		if h.InventoryEntry == e {
			return true
		}
	}
	return false
}

// StandingHolds are status.holds while the plan is not executed (refused,
// or stopped before its releases): the holds honoured, and those that end
// as they were listed, since they stand until their release is written.
func (p *Plan) StandingHolds() []v1alpha1.ObjectHold {
	holds := append([]v1alpha1.ObjectHold(nil), p.Holds...)
	for _, r := range p.Releases {
		if r.standing != nil {
			holds = append(holds, *r.standing)
		}
	}
	sort.Slice(holds, func(a, b int) bool {
		return Key(holds[a].Kind, holds[a].Namespace, holds[a].Name) < Key(holds[b].Kind, holds[b].Namespace, holds[b].Name)
	})
	return holds
}

// item is one object of the revision and its live counterpart.
type item struct {
	entry  v1alpha1.InventoryEntry
	object profile.Object
	digest string
	// live is the object on the cluster, nil when it is new.
	live metav1.Object
	// otherOwners are the other ProfileSyncs whose inventory lists it.
	otherOwners []types.NamespacedName
	held        bool
}

// Decide makes the plan of one sync. An error is a comparison that could
// not be made (an object that does not convert), not a refusal.
func Decide(in Input) (*Plan, error) {
	p := &Plan{Topics: map[string][]string{}}
	p.LostClaims = claimsLost(&in)
	lost := map[v1alpha1.InventoryEntry]bool{}
	for _, e := range p.LostClaims {
		lost[e] = true
	}
	owned := map[v1alpha1.InventoryEntry]bool{}
	for _, e := range in.Inventory {
		if !lost[e] {
			p.RetainedInventory = append(p.RetainedInventory, e)
			owned[e] = true
		}
	}

	items := make([]item, 0, len(in.Objects))
	inRevision := make(map[v1alpha1.InventoryEntry]bool, len(in.Objects))
	for i, o := range in.Objects {
		e := EntryOf(o)
		inRevision[e] = true
		it := item{entry: e, object: o, otherOwners: in.Claims.others(e, in.Sync)}
		if i < len(in.Digests) {
			it.digest = in.Digests[i]
		}
		if live := in.Live.Object(e); live != nil {
			it.live = live
		}
		items = append(items, it)
	}
	// The entries the revision dropped that no other ProfileSync lists:
	// pruned unless held.
	var dropped []v1alpha1.InventoryEntry
	if in.Prune {
		for _, e := range p.RetainedInventory {
			if !inRevision[e] && len(in.Claims.others(e, in.Sync)) == 0 {
				dropped = append(dropped, e)
			}
		}
		SortInventory(dropped)
	}

	if denied := checkAccess(&in, items); len(denied) > 0 {
		p.Refusal = &Refusal{Kind: AccessDenied, Problems: denied}
		return p, nil
	}

	j, err := judgeHolds(&in, items, dropped, owned)
	if err != nil {
		return nil, err
	}
	p.HoldsJudged = true
	p.Holds, p.waiting, p.RefusedHolds, p.refusedHolds, p.IgnoredHolds = j.held, j.waiting, j.refused, j.refusedHolds, j.ignored
	p.Releases = j.releases
	for i := range items {
		items[i].held = p.held(items[i].entry)
	}
	var kept, pruned []v1alpha1.InventoryEntry
	for _, e := range dropped {
		if p.held(e) {
			kept = append(kept, e)
		} else {
			pruned = append(pruned, e)
		}
	}
	p.reportHolds(&in)

	if problems := checkUpdateRules(&in, items, inRevision, pruned); len(problems) > 0 {
		p.Refusal = &Refusal{Kind: UpdateRulesBroken, Problems: problems}
		p.Releases = nil
		p.keepReleasesStanding(j.releases)
		return p, nil
	}

	owner := OwnerLabels(in.Sync)
	if p.Writes, p.Drifts, p.UpToDate, err = writes(&in, items, owner); err != nil {
		return nil, err
	}
	p.DriftJudged = true
	p.reportDrift()
	p.reportApplied(&in)

	p.Prunes = append(p.Prunes, pruned...)
	sort.SliceStable(p.Prunes, func(a, b int) bool {
		return p.Prunes[a].Kind == v1alpha1.NamespacedCloudProfileKind && p.Prunes[b].Kind != v1alpha1.NamespacedCloudProfileKind
	})
	p.Claim = claimFor(p.RetainedInventory, p.Writes)
	p.Inventory = make([]v1alpha1.InventoryEntry, 0, len(items)+len(kept))
	for _, it := range items {
		p.Inventory = append(p.Inventory, it.entry)
	}
	p.Inventory = append(p.Inventory, kept...)
	SortInventory(p.Inventory)
	p.Outranked = outranked(&in, items)
	return p, nil
}

// keepReleasesStanding keeps the holds that would have ended as they stand,
// for a refused plan: it writes nothing, the end of a hold included.
func (p *Plan) keepReleasesStanding(releases []Release) {
	for _, r := range releases {
		if r.standing != nil {
			p.Holds = append(p.Holds, *r.standing)
			if p.standingEnds == nil {
				p.standingEnds = map[v1alpha1.InventoryEntry]string{}
			}
			p.standingEnds[r.Entry] = r.Reason
		}
	}
	sort.Slice(p.Holds, func(a, b int) bool {
		return Key(p.Holds[a].Kind, p.Holds[a].Namespace, p.Holds[a].Name) < Key(p.Holds[b].Kind, p.Holds[b].Namespace, p.Holds[b].Name)
	})
}

// OwnerLabels are the labels that name the ProfileSync on what it applies.
func OwnerLabels(sync types.NamespacedName) map[string]string {
	return map[string]string{v1alpha1.OwnerNamespaceLabel: sync.Namespace, v1alpha1.OwnerNameLabel: sync.Name}
}

// writes are the writes the revision needs, in stage order: every object
// that is new, that Git changed since it was applied (its digest differs),
// or whose live counterpart lacks something of Git (with the fields it
// lacks). What only the live object has is not a reason to write: it is not
// Git's. A held object is never written. Under mode warn, an object Git did
// not change but the cluster did (drift) is not written either: it is
// returned among the drifts, with its fields. The objects found up to date
// are returned too; one that in.UpToDate holds at the same resourceVersion
// and digest is not compared again (the comparison grows with the objects:
// about 0.3 ms each on a profile of 600 versions).
func writes(in *Input, items []item, owner map[string]string) ([]Write, []Drift, UpToDate, error) {
	var out []Write
	var drifts []Drift
	upToDateNow := UpToDate{}
	for _, it := range items {
		if it.held {
			continue
		}
		var fields []string
		var err error
		if it.live != nil {
			applied := it.live.GetAnnotations()[v1alpha1.AppliedDigestAnnotation] == it.digest
			if applied && (in.UpToDate.stands(it.entry, it.live, it.digest) || upToDate(it.object, it.live, owner)) {
				upToDateNow[it.entry] = Compared{ResourceVersion: it.live.GetResourceVersion(), Digest: it.digest}
				continue
			}
			if fields, err = DriftedFields(it.object, it.live, owner); err != nil {
				return nil, nil, nil, err
			}
			if applied && len(fields) > 0 && in.DriftMode == v1alpha1.DriftDetectionWarn {
				drifts = append(drifts, Drift{Ref: it.object.Ref(), Fields: fields})
				continue
			}
			if len(fields) == 0 {
				if applied {
					continue
				}
				// Git changed (or dropped) only fields the cluster has
				// more of; the apply removes what Git no longer sets.
				fields = []string{fmt.Sprintf("metadata.annotations[%s]", v1alpha1.AppliedDigestAnnotation)}
			}
		}
		desired, err := DesiredObject(it.object, owner, it.digest)
		if err != nil {
			return nil, nil, nil, err
		}
		out = append(out, Write{Entry: it.entry, Object: it.object, Desired: desired, Create: it.live == nil, Fields: fields, Stage: stageOf(in.Live, it.object)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Stage < out[j].Stage })
	return out, drifts, upToDateNow, nil
}

// stageOf is when an object of the revision is written. The revision as a
// whole was validated already; the stages only keep every single write
// valid for the admission webhooks.
func stageOf(live Live, o profile.Object) Stage {
	if o.CloudProfile != nil {
		return StageParents
	}
	ncp := o.NamespacedCloudProfile
	parent, ok := live.CloudProfiles[ncp.Spec.Parent.Name]
	if !ok {
		return StageNeedsNewParent
	}
	if _, errs := merge.Namespaced(&parent.Spec, &ncp.Spec); len(errs) > 0 {
		return StageNeedsNewParent
	}
	return StageValidNow
}

// checkUpdateRules compares the revision with the live objects with
// merge.CheckCloudProfileChange and merge.CheckNamespacedChange, as the
// admission webhook does: no version that left unavailable may become
// unavailable again, no maxNodesTotal may be lowered, no CloudProfile may
// lose (or, by pruning, be deleted with) what a NamespacedCloudProfile that
// stays on the cluster overrides, and no override a NamespacedCloudProfile
// already has may get an expirationDate in the past (Gardener's rule). A
// held profile is not written, so not checked.
func checkUpdateRules(in *Input, items []item, inRevision map[v1alpha1.InventoryEntry]bool, pruned []v1alpha1.InventoryEntry) []string {
	var problems []string
	report := func(file, ref string, errs []error) {
		for _, e := range errs {
			problems = append(problems, fmt.Sprintf("%s: %s: %s", file, ref, e.Error()))
		}
	}
	prunes := map[v1alpha1.InventoryEntry]bool{}
	for _, e := range pruned {
		prunes[e] = true
	}
	// Children that stay as they are on the cluster: not in this revision
	// and not about to be pruned. Children in the revision were already
	// merged with the new parent by profile.Validate.
	var remaining []v1alpha1.NamespacedCloudProfile
	for key, ncp := range in.Live.Namespaced {
		e := v1alpha1.InventoryEntry{Kind: v1alpha1.NamespacedCloudProfileKind, Namespace: key.Namespace, Name: key.Name}
		if !inRevision[e] && !prunes[e] {
			remaining = append(remaining, *ncp)
		}
	}
	sort.Slice(remaining, func(i, j int) bool {
		return Key("", remaining[i].Namespace, remaining[i].Name) < Key("", remaining[j].Namespace, remaining[j].Name)
	})
	for _, it := range items {
		cp := it.object.CloudProfile
		if cp == nil || it.live == nil || it.held {
			continue
		}
		liveCP := it.live.(*v1alpha1.CloudProfile)
		report(it.object.File, it.object.Ref(), toErrors(merge.CheckCloudProfileChange(cp.Name, &liveCP.Spec, &cp.Spec, remaining, in.Now)))
	}
	for _, it := range items {
		ncp := it.object.NamespacedCloudProfile
		if ncp == nil || it.live == nil || it.held {
			continue
		}
		liveNCP := it.live.(*v1alpha1.NamespacedCloudProfile)
		report(it.object.File, it.object.Ref(), toErrors(merge.CheckNamespacedChange(liveNCP, parentAsWritten(in, items, ncp.Spec.Parent.Name), &ncp.Spec, in.Now)))
	}
	for _, e := range pruned {
		if e.Kind != v1alpha1.CloudProfileKind {
			continue
		}
		if liveCP, ok := in.Live.CloudProfiles[e.Name]; ok {
			report("(removed from Git)", "CloudProfile/"+e.Name, toErrors(merge.CheckCloudProfileChange(e.Name, &liveCP.Spec, nil, remaining, in.Now)))
		}
	}
	return problems
}

// parentAsWritten is the spec the CloudProfile name has when this sync
// writes its NamespacedCloudProfiles: the revision's (CloudProfiles are
// written first), else the live one; nil when neither has it.
func parentAsWritten(in *Input, items []item, name string) *v1alpha1.CloudProfileSpec {
	for _, it := range items {
		if cp := it.object.CloudProfile; cp != nil && cp.Name == name && !it.held {
			return &cp.Spec
		}
	}
	if live, ok := in.Live.CloudProfiles[name]; ok {
		return &live.Spec
	}
	return nil
}

func toErrors[E error](errs []E) []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}

// claimFor is the inventory plus every object written that it lacks,
// sorted; nil when it lacks none.
func claimFor(inventory []v1alpha1.InventoryEntry, writes []Write) []v1alpha1.InventoryEntry {
	listed := make(map[v1alpha1.InventoryEntry]bool, len(inventory))
	for _, e := range inventory {
		listed[e] = true
	}
	entries := append([]v1alpha1.InventoryEntry(nil), inventory...)
	added := false
	for _, w := range writes {
		if listed[w.Entry] {
			continue
		}
		listed[w.Entry] = true
		entries = append(entries, w.Entry)
		added = true
	}
	if !added {
		return nil
	}
	SortInventory(entries)
	return entries
}
