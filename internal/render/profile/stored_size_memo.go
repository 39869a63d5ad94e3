package profile

import (
	"crypto/sha256"
	"encoding/json"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/lru"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// storedSizeMemoEntries bounds the memo of stored sizes: enough for several
// ProfileSyncs at the default --max-objects (1,100) each, so that a push to
// any of them finds every unchanged object of its revision. An entry is a
// 32-byte digest and a number (with the LRU's bookkeeping, under 200
// bytes), so the memo holds under 2 MiB however large the profiles are: it
// keeps sizes, never objects.
const storedSizeMemoEntries = 8192

// storedSizeMemo remembers, across validations, the stored size of an
// object (storedSize) by the digest of what decides it: the object as the
// sync applies it (kind, metadata and spec) and, for a NamespacedCloudProfile
// whose merge succeeded, the digest of its parent's spec (the merged
// profile its status holds is the merge of the two, which does not depend
// on the time; whether the merge succeeded may, so that is in the key too).
// Estimating a size encodes the object with its status (for a namespaced
// profile, the whole merged parent) and reads it against the CRD schema with
// structured-merge-diff; a push that changes one CloudProfile changes the
// key of it and of its NamespacedCloudProfiles only, so only those are
// estimated again.
//
// An entry is exactly what estimating again would give, so the verdict of
// storedSizeProblem does not depend on the memo
// (FuzzTheStoredSizeMemoKeepsEveryVerdictOfAColdEstimate).
type storedSizeMemo struct {
	sizes *lru.Cache
	// estimated counts the sizes estimated rather than remembered: how the
	// tests see that a push estimates only what changed.
	estimated atomic.Int64
}

func newStoredSizeMemo() *storedSizeMemo {
	return &storedSizeMemo{sizes: lru.New(storedSizeMemoEntries)}
}

// storedSizes is the memo every validation of the process shares.
var storedSizes = newStoredSizeMemo()

// size returns storedSize(o, merged), remembered by the key of o and
// mergedFrom: the digest of the parent spec merged is from (specDigest),
// empty when merged is nil. A merged spec without the digest of its parent
// is estimated and not remembered. An error is returned each time, never
// kept.
func (m *storedSizeMemo) size(o Object, merged *v1alpha1.CloudProfileSpec, mergedFrom string) (int64, error) {
	key, keyed := storedSizeKey(o, merged, mergedFrom)
	if keyed {
		if size, found := m.sizes.Get(key); found {
			return size.(int64), nil
		}
	}
	m.estimated.Add(1)
	size, err := storedSize(o, merged)
	if err != nil {
		return 0, err
	}
	if keyed {
		m.sizes.Add(key, size)
	}
	return size, nil
}

// storedSizeKey is the digest of what decides o's stored size; false when it
// cannot be told (a merged spec whose parent has no digest, an object that
// does not encode).
func storedSizeKey(o Object, merged *v1alpha1.CloudProfileSpec, mergedFrom string) ([32]byte, bool) {
	if merged != nil && mergedFrom == "" {
		return [32]byte{}, false
	}
	typeMeta := metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: o.Kind()}
	var applied any
	if cp := o.CloudProfile; cp != nil {
		applied = &v1alpha1.CloudProfile{TypeMeta: typeMeta, ObjectMeta: cp.ObjectMeta, Spec: cp.Spec}
	} else {
		ncp := o.NamespacedCloudProfile
		applied = &v1alpha1.NamespacedCloudProfile{TypeMeta: typeMeta, ObjectMeta: ncp.ObjectMeta, Spec: ncp.Spec}
	}
	data, err := json.Marshal(struct {
		Applied    any    `json:"applied"`
		Merged     bool   `json:"merged"`
		MergedFrom string `json:"mergedFrom"`
	}{applied, merged != nil, mergedFrom})
	if err != nil {
		return [32]byte{}, false
	}
	return sha256.Sum256(data), true
}

// specDigest is the digest of a parent's spec (as merged: with the server's
// defaults) for storedSizeKey; empty when it does not encode.
func specDigest(spec *v1alpha1.CloudProfileSpec) string {
	data, err := json.Marshal(spec)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return string(sum[:])
}
