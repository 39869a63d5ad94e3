package profile

import (
	"crypto/sha256"
	"sync/atomic"

	"k8s.io/utils/lru"
)

// managedFieldsMemoEntries bounds the memo of managed fields' sizes: enough
// for several ProfileSyncs at the default --max-objects (1,100) each, so
// that a push to any of them finds every unchanged object of its revision.
// An entry is a 32-byte digest and a number (with the LRU's bookkeeping,
// under 200 bytes), so the memo holds under 2 MiB however large the
// profiles are: it keeps sizes, never objects.
const managedFieldsMemoEntries = 8192

// managedFieldsMemo remembers, across validations, the size of the
// managedFields of the two writers of an object (the sync's apply and the
// status controllers' write) by the digest of the object's stored form
// (storedForms' stored JSON: metadata, spec and the status written at
// storedSizeInstant). Computing them reads the object against the CRD
// schema with structured-merge-diff, most of the stored-size estimate's
// cost; a push that changes one CloudProfile changes the stored form of it
// and of its NamespacedCloudProfiles only, so only those are computed again.
//
// The stored JSON determines both writers' objects (the applied one is its
// metadata and spec, the status write its name, namespace and status), so an
// entry is exactly what computing again would give: the verdict of
// storedSizeProblem does not depend on the memo
// (TestTheStoredSizeMemoKeepsEveryVerdictOfAColdEstimate).
type managedFieldsMemo struct {
	sizes *lru.Cache
	// computed counts the sizes computed rather than remembered: how the
	// tests see that a push estimates only what changed.
	computed atomic.Int64
}

func newManagedFieldsMemo(entries int) *managedFieldsMemo {
	return &managedFieldsMemo{sizes: lru.New(entries)}
}

// storedSizeFields is the memo every validation of the process shares.
var storedSizeFields = newManagedFieldsMemo(managedFieldsMemoEntries)

// size returns the managed fields' size of the object whose stored JSON is
// storedJSON: remembered, or computed by compute and remembered when it
// succeeds (an error is returned each time, never kept).
func (m *managedFieldsMemo) size(storedJSON []byte, compute func() (int64, error)) (int64, error) {
	key := sha256.Sum256(storedJSON)
	if size, found := m.sizes.Get(key); found {
		return size.(int64), nil
	}
	m.computed.Add(1)
	size, err := compute()
	if err != nil {
		return 0, err
	}
	m.sizes.Add(key, size)
	return size, nil
}
