package controllers

import (
	"container/list"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/profilesync/profilesync/internal/memorybudget"
)

// decodedRevisions keeps the objects of the last revision each ProfileSync
// built and decoded, every ProfileSync's in one cache bounded in bytes.
// Building is by far the most expensive step of a sync (kustomize over every
// profile, in a process of its own), and at every interval without a new
// commit it would produce the same objects; they are kept instead.
// Validation still runs every time, since parents on the cluster may have
// changed. The objects are shared, never modified after decoding.
//
// The bound is the manager's --decoded-cache-size, one of the terms of its
// memory budget (internal/memorybudget): past it the least recently used
// revisions are dropped, and built again at their ProfileSync's next sync. A
// revision larger than the whole bound is not kept at all. A refused revision
// is dropped too (ProfileSyncReconciler.Reconcile): its refusal is
// remembered (rememberedRefusals), its objects are not.
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

// decodedSize estimates what a decoded revision holds in memory: every
// struct, slice, string, map and pointer its objects, digests and warnings
// reach, counted as the Go runtime lays them out (heapSize), plus a quarter
// for the allocator's size classes. The JSON of an object says little about
// it: a version of a machine image is twenty bytes of JSON and two hundred in
// memory (every field of the API types takes its width, set or not), a blob
// of providerConfig the same in both. TestDecodedSizeIsAtLeastWhatTheObjectsTake
// measures both against the heap.
func decodedSize(d decodedRevision) int64 {
	size := heapSize(reflect.ValueOf(d.objects)) + heapSize(reflect.ValueOf(d.digests)) + heapSize(reflect.ValueOf(d.warnings)) + heapSize(reflect.ValueOf(d.problems)) +
		int64(len(d.revision)+len(d.path)) + int64(unsafe.Sizeof(d))
	return size + size/4
}

var timeType = reflect.TypeFor[time.Time]()

// heapSize is the memory that v refers to outside itself: the backing
// arrays of its slices and strings, what its pointers and maps hold, and
// their own contents in turn. v's own width is counted by whatever holds
// it. A time.Time's location is shared by every time, and not counted.
func heapSize(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.String:
		return int64(v.Len())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		elem := v.Elem()
		return int64(elem.Type().Size()) + heapSize(elem)
	case reflect.Slice:
		if v.IsNil() {
			return 0
		}
		size := int64(v.Cap()) * int64(v.Type().Elem().Size())
		for i := range v.Len() {
			size += heapSize(v.Index(i))
		}
		return size
	case reflect.Map:
		if v.IsNil() {
			return 0
		}
		// A bucket slot per entry, keys and values inline, about twice
		// what they take.
		size := 2 * int64(v.Len()) * int64(v.Type().Key().Size()+v.Type().Elem().Size())
		for iter := v.MapRange(); iter.Next(); {
			size += heapSize(iter.Key()) + heapSize(iter.Value())
		}
		return size
	case reflect.Struct:
		if v.Type() == timeType {
			return 0
		}
		var size int64
		for i := range v.NumField() {
			size += heapSize(v.Field(i))
		}
		return size
	case reflect.Array:
		var size int64
		for i := range v.Len() {
			size += heapSize(v.Index(i))
		}
		return size
	default:
		return 0
	}
}
