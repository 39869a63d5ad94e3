package profile

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/lru"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
	"github.com/profilesync/profilesync/internal/memorybudget"
	"github.com/profilesync/profilesync/internal/render/merge"
)

// validationMemoEntries bounds the memo of validations in entries: a
// CloudProfile takes one (its spec's rules), a NamespacedCloudProfile one
// (its merge), so as many as the stored-size memo holds objects.
const validationMemoEntries = storedSizeMemoEntries

// ValidationMemoBytes bounds the memo of validations in bytes
// (memorybudget.HeapEstimate of what each entry holds). An entry of a
// NamespacedCloudProfile holds its merged spec, as large as its parent;
// namespaced profiles of the same spec and parent share one (the bench
// landscape's 110 objects take 3.1 MiB: 10 CloudProfiles' outcomes and 10
// merged specs of 600 versions, BenchmarkValidateAPush's memo-MiB), so 64
// MiB keep some 200 distinct merged profiles of 600 versions. The least
// recently used entries go first; an entry larger than the bound is not
// kept. memorybudget.ManagerBaseline holds it
// (TestTheManagerBaselineHoldsTheValidationMemo).
const ValidationMemoBytes int64 = 64 << 20

// validationMemo remembers, across validations, the outcome of the rules of
// one object that read the time (lifecycle.ValidateCloudProfileSpecAt of a
// CloudProfile's spec, merge.NamespacedWithWarnings of a
// NamespacedCloudProfile with its parent), by the digest of everything else
// that decides it: the spec validated (and the path its problems are at), or
// the namespaced profile's spec and the digest of the parent spec it is
// merged with, from Git or from the cluster. Those rules read the time only
// to compare it with a lifecycle stage's start or a version's
// expirationDate of the specs they read (NextChange), so an outcome stands
// for every time that lies on the same side of each of those instants as
// the time it was computed at (instantCell): a clock move that crosses none
// of an object's instants finds it; one that crosses an instant of the
// object validates it again.
//
// What reads more than one object (a name defined twice, a parent missing,
// refused or invalid, the namespace rules) is not kept: validate runs it
// over the whole set every time. An entry is exactly what running the rules
// again would give, so no verdict depends on the memo
// (FuzzTheValidationMemoKeepsEveryVerdictOfAColdValidation).
type validationMemo struct {
	mu       sync.Mutex
	entries  *lru.Cache
	bytes    int64
	maxBytes int64
	// validated counts the outcomes computed rather than remembered: how
	// the tests see that a push validates only what it changed.
	validated atomic.Int64
}

// memoEntry is one remembered outcome and the times it stands for.
type memoEntry struct {
	cell  instantCell
	bytes int64
	// specErrs and specWarnings are lifecycle.ValidateCloudProfileSpecAt's.
	specErrs     field.ErrorList
	specWarnings []string
	// merged, mergeErrs and mergeWarnings are merge.NamespacedWithWarnings'.
	merged        *v1alpha1.CloudProfileSpec
	mergeErrs     field.ErrorList
	mergeWarnings []string
}

// newValidationMemo is an empty memo of at most maxBytes.
func newValidationMemo(maxBytes int64) *validationMemo {
	m := &validationMemo{maxBytes: maxBytes}
	m.entries = lru.NewWithEvictionFunc(validationMemoEntries, func(_ lru.Key, value any) {
		m.bytes -= value.(*memoEntry).bytes
	})
	return m
}

// validations is the memo every validation of the process shares.
var validations = newValidationMemo(ValidationMemoBytes)

// specAt returns lifecycle.ValidateCloudProfileSpecAt(spec, path, now),
// remembered by digest, specDigest(spec) ("" for a spec not to remember). The
// errors are the caller's to change.
func (m *validationMemo) specAt(spec *v1alpha1.CloudProfileSpec, digest string, path *field.Path, now time.Time) (field.ErrorList, []string) {
	key, keyed := memoKey(now, "spec", path.String(), digest)
	if keyed {
		if entry, found := m.get(key, now); found {
			return copyErrors(entry.specErrs), entry.specWarnings
		}
	}
	m.validated.Add(1)
	errs, warnings := lifecycle.ValidateCloudProfileSpecAt(spec, path, now)
	if keyed {
		instants := instantAfter{after: now}
		instants.spec(spec)
		m.add(key, &memoEntry{cell: instants.cell(), specErrs: copyErrors(errs), specWarnings: warnings})
	}
	return errs, warnings
}

// namespacedAt returns merge.NamespacedWithWarnings(parent, ncp, now),
// remembered by ncp and parentDigest, specDigest(parent) ("" for a parent not
// to remember: a missing one). The merged spec is shared: copy it before
// changing it; the errors are the caller's to change.
func (m *validationMemo) namespacedAt(parent *v1alpha1.CloudProfileSpec, parentDigest string, ncp *v1alpha1.NamespacedCloudProfileSpec,
	now time.Time) (*v1alpha1.CloudProfileSpec, field.ErrorList, []string) {
	key, keyed := [32]byte{}, false
	if ncpJSON, err := json.Marshal(ncp); err == nil {
		key, keyed = memoKey(now, "namespaced", string(ncpJSON), parentDigest)
	}
	if keyed {
		if entry, found := m.get(key, now); found {
			return entry.merged, copyErrors(entry.mergeErrs), entry.mergeWarnings
		}
	}
	m.validated.Add(1)
	merged, errs, warnings := merge.NamespacedWithWarnings(parent, ncp, now)
	if keyed {
		instants := instantAfter{after: now}
		instants.spec(parent)
		instants.namespaced(ncp)
		instants.spec(merged)
		m.add(key, &memoEntry{cell: instants.cell(), merged: merged, mergeErrs: copyErrors(errs), mergeWarnings: warnings})
	}
	return merged, errs, warnings
}

// memoKey is the digest of an outcome's inputs but the time; false when
// they cannot be told (no digest) or the time is zero (the rules' "at no
// particular time", which no instant decides).
func memoKey(now time.Time, kind, input, digest string) ([32]byte, bool) {
	if digest == "" || now.IsZero() {
		return [32]byte{}, false
	}
	h := sha256.New()
	for _, part := range []string{kind, input, digest} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	var key [32]byte
	h.Sum(key[:0])
	return key, true
}

func (m *validationMemo) get(key [32]byte, now time.Time) (*memoEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	value, found := m.entries.Get(key)
	if !found {
		return nil, false
	}
	entry := value.(*memoEntry)
	if !entry.cell.holds(now) {
		return nil, false
	}
	return entry, true
}

// add keeps entry under key, then drops the least recently used entries
// until the memo fits its bytes; an entry larger than the bound alone is
// not kept.
func (m *validationMemo) add(key [32]byte, entry *memoEntry) {
	entry.bytes = memorybudget.HeapEstimate(entry) + int64(len(key))
	if entry.bytes > m.maxBytes {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries.Remove(key)
	m.entries.Add(key, entry)
	m.bytes += entry.bytes
	for m.bytes > m.maxBytes && m.entries.Len() > 0 {
		m.entries.RemoveOldest()
	}
}

// size is the memo's estimated bytes and entries.
func (m *validationMemo) size() (bytes int64, entries int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes, m.entries.Len()
}

// copyErrors copies errs, each error too: callers complete their details
// (merge.ExplainMissingParent) and the memo's must stay as computed.
func copyErrors(errs field.ErrorList) field.ErrorList {
	if errs == nil {
		return nil
	}
	copied := make(field.ErrorList, len(errs))
	for i, e := range errs {
		c := *e
		copied[i] = &c
	}
	return copied
}

// instantCell is the set of times on the same side of each of some
// instants as the time an outcome was computed at: the times whose outcome
// is that one. When that time is itself an instant, it is the only one
// (a rule may compare with the instant either way); else it is the open
// interval between the latest instant before it and the earliest after.
type instantCell struct {
	at                  time.Time
	before, after       time.Time
	hasBefore, hasAfter bool
}

// holds reports whether t is in the cell.
func (c instantCell) holds(t time.Time) bool {
	if c.hasBefore && c.before.Equal(c.at) {
		return t.Equal(c.at)
	}
	return (!c.hasBefore || t.After(c.before)) && (!c.hasAfter || t.Before(c.after))
}

// cell is the instantCell of the time n was made for, among the instants
// it was shown.
func (n *instantAfter) cell() instantCell {
	return instantCell{at: n.after, before: n.before, hasBefore: n.hasBefore, after: n.at, hasAfter: n.ok}
}
