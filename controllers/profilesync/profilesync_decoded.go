package profilesync

import (
	"container/list"
	"sync"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/profilesync/profilesync/internal/memorybudget"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// decodedRevisions keeps the objects of the last revision each ProfileSync
// built and decoded, every ProfileSync's in one cache bounded in bytes.
// Building is by far the most expensive step of a sync (kustomize over every
// profile, in a process of its own), and at every interval without a new
// commit it would produce the same objects; they are kept instead. Their
// checks run again only when their verdict could change
// (profilesync_checked.go). The objects are shared, never modified after
// decoding.
//
// The bound is the manager's --decoded-cache-size, one of the terms of its
// memory budget (internal/memorybudget): past it the least recently used
// revisions are dropped, and built again at their ProfileSync's next sync. A
// revision larger than the whole bound is not kept at all. A refused revision
// is dropped too (ProfileSyncReconciler.Reconcile): its refusal is
// remembered (syncMemory), its objects are not.
type decodedRevisions struct {
	mu sync.Mutex
	// byKey holds the list element of each ProfileSync's entry; recent
	// orders the entries from the most recently used to the least.
	byKey  map[string]*list.Element
	recent list.List
	// bytes is the estimated size of every entry kept, together.
	bytes int64
}

type decodedEntry struct {
	key     string
	decoded decodedRevision
}

// get returns the revision kept for the ProfileSync key, if it is the one at
// revision and path, and marks it as just used.
func (d *decodedRevisions) get(key, revision, path string) (decodedRevision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	element, ok := d.byKey[key]
	if !ok {
		return decodedRevision{}, false
	}
	e := element.Value.(*decodedEntry).decoded
	if e.revision != revision || e.path != path {
		return decodedRevision{}, false
	}
	d.recent.MoveToFront(element)
	return e, true
}

// kept returns the revision kept for the ProfileSync key, whichever it is,
// without marking it used: the build of its next revision reuses its
// objects.
func (d *decodedRevisions) kept(key string) (decodedRevision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	element, ok := d.byKey[key]
	if !ok {
		return decodedRevision{}, false
	}
	return element.Value.(*decodedEntry).decoded, true
}

// known are the objects of d by the digest of their document, for
// profile.DecodeDocumentsReusing.
func (d decodedRevision) known() map[[32]byte]profile.Object {
	known := make(map[[32]byte]profile.Object, len(d.documents))
	for i, digest := range d.documents {
		known[digest] = d.objects[i]
	}
	return known
}

// put keeps decoded as the ProfileSync key's revision, replacing the one it
// kept, and drops the least recently used revisions until every revision
// kept fits maxBytes (zero means memorybudget.DefaultCache). It returns false
// when decoded alone is larger than maxBytes and is not kept.
func (d *decodedRevisions) put(key string, decoded decodedRevision, maxBytes int64) bool {
	if maxBytes <= 0 {
		maxBytes = memorybudget.DefaultCache
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.remove(key)
	if decoded.size > maxBytes {
		return false // built again at every sync: better than a budget broken
	}
	if d.byKey == nil {
		d.byKey = map[string]*list.Element{}
	}
	d.byKey[key] = d.recent.PushFront(&decodedEntry{key: key, decoded: decoded})
	d.bytes += decoded.size
	for d.bytes > maxBytes {
		d.remove(d.recent.Back().Value.(*decodedEntry).key)
	}
	return true
}

// forget drops the ProfileSync key's revision: it was refused, or the
// ProfileSync deleted.
func (d *decodedRevisions) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.remove(key)
}

func (d *decodedRevisions) remove(key string) {
	element, ok := d.byKey[key]
	if !ok {
		return
	}
	d.recent.Remove(element)
	delete(d.byKey, key)
	d.bytes -= element.Value.(*decodedEntry).decoded.size
}

// size is the estimated size of every revision kept, and how many there are.
func (d *decodedRevisions) size() (bytes int64, revisions int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bytes, len(d.byKey)
}

// collector reports the size of the cache at each scrape: the term of the
// memory budget it is (docs/metrics.md).
func (d *decodedRevisions) collector() prometheus.Collector {
	return decodedCollector{d}
}

// DecodedRevisionsCollector reports the size of the reconciler's cache of
// decoded revisions (collector); the manager's wiring registers it.
func (r *ProfileSyncReconciler) DecodedRevisionsCollector() prometheus.Collector {
	return r.decoded.collector()
}

type decodedCollector struct{ cache *decodedRevisions }

var (
	decodedBytesDesc = prometheus.NewDesc("profilesync_decoded_revisions_bytes",
		"Estimated memory of the decoded revisions kept between syncs, every ProfileSync's together; at most --decoded-cache-size.", nil, nil)
	decodedCountDesc = prometheus.NewDesc("profilesync_decoded_revisions",
		"Decoded revisions kept between syncs, at most one per ProfileSync; a refused revision keeps none.", nil, nil)
)

func (c decodedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- decodedBytesDesc
	ch <- decodedCountDesc
}

func (c decodedCollector) Collect(ch chan<- prometheus.Metric) {
	bytes, revisions := c.cache.size()
	ch <- prometheus.MustNewConstMetric(decodedBytesDesc, prometheus.GaugeValue, float64(bytes))
	ch <- prometheus.MustNewConstMetric(decodedCountDesc, prometheus.GaugeValue, float64(revisions))
}

// decodedSize estimates what a decoded revision holds in memory
// (memorybudget.HeapEstimate of its objects, digests, document digests,
// warnings and problems, and of the build's result, whose documents the
// next build reuses: about the size of the rendered landscape).
// The JSON of an object says little about it: a version of a machine image is
// twenty bytes of JSON and two hundred in memory, a blob of providerConfig the
// same in both.
func decodedSize(d decodedRevision) int64 {
	return memorybudget.HeapEstimate(d.objects, d.digests, d.documents, d.warnings, d.problems, d.built) +
		int64(len(d.revision)+len(d.path)) + int64(unsafe.Sizeof(d))
}
