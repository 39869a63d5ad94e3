package memorybudget

import (
	"reflect"
	"time"
)

// HeapEstimate is the memory that the values hold on the heap: every struct,
// slice, string, map and pointer they reach, counted as the Go runtime lays
// them out, plus a quarter for the allocator's size classes. It is what the
// caches of the budget count against their bound (--decoded-cache-size): an
// estimate on the safe side, never far above what the heap holds, which
// TestHeapEstimateIsAtLeastWhatDecodedProfilesTake measures.
func HeapEstimate(values ...any) int64 {
	var size int64
	for _, v := range values {
		size += heapSize(reflect.ValueOf(v))
	}
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
