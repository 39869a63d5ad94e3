package memorybudget_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/memorybudget"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// TestHeapEstimateIsAtLeastWhatDecodedProfilesTake: the estimate that the
// decoded-revision cache counts against --decoded-cache-size is above the
// heap that decoded profiles really hold, measured, and not so far above that
// the bound keeps little. Two shapes: the one that takes the most memory per
// byte of JSON (many small versions of many images) and a providerConfig
// blob. The heap is measured in this package because nothing else runs in
// its test process; a measurement next to a running manager counts what the
// manager frees meanwhile.
func TestHeapEstimateIsAtLeastWhatDecodedProfilesTake(t *testing.T) {
	for _, shape := range []struct {
		name string
		yaml func(name string) string
	}{
		{"many small versions", manyVersionsProfile},
		{"a providerConfig blob", func(name string) string { return providerConfigProfile(name, 1<<20) }},
	} {
		t.Run(shape.name, func(t *testing.T) {
			g := NewWithT(t)
			docs := make([]profile.Document, 20)
			for i := range docs {
				docs[i] = profile.Document{File: fmt.Sprintf("p%d.yaml", i), Data: []byte(shape.yaml(fmt.Sprintf("p%d", i)))}
			}
			// The median of three decodings: one stray collection
			// between two readings moves one figure, not the median.
			var held []int64
			var estimate int64
			for range 3 {
				before := heapAfterGC()
				objects, problems := profile.DecodeDocuments(docs)
				held = append(held, heapAfterGC()-before)
				g.Expect(problems).To(BeEmpty())
				estimate = memorybudget.HeapEstimate(objects)
				runtime.KeepAlive(objects)
			}
			slices.Sort(held)
			measured := held[1]
			t.Logf("%s: objects hold %d bytes of heap (of %v), estimated %d", shape.name, measured, held, estimate)
			g.Expect(estimate).To(BeNumerically(">=", measured))
			g.Expect(estimate).To(BeNumerically("<", 2*measured), "not so far above that the bound keeps little")
			runtime.KeepAlive(docs)
		})
	}
}

func TestHeapEstimateCountsWhatValuesReach(t *testing.T) {
	type entry struct {
		Name  string
		Items []int64
		Next  *entry
		Tags  map[string]string
	}
	for _, row := range []struct {
		name  string
		value any
		want  int64
	}{
		{"nothing", nil, 0},
		{"a string's bytes, and a quarter for size classes", "abcdefgh", 10},
		{"a slice's capacity, not its length", make([]int64, 1, 4), 32 * 5 / 4},
		{"a pointer's target and what it reaches", &entry{Name: "abcdefgh"}, (int64(unsafe.Sizeof(entry{})) + 8) * 5 / 4},
	} {
		t.Run(row.name, func(t *testing.T) {
			NewWithT(t).Expect(memorybudget.HeapEstimate(row.value)).To(Equal(row.want))
		})
	}
}

func heapAfterGC() int64 {
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return int64(stats.HeapAlloc)
}

// manyVersionsProfile is a CloudProfile of 30 machine images of 100 versions
// each: about 100 KB of YAML of small fields.
func manyVersionsProfile(name string) string {
	var b strings.Builder
	b.WriteString("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: " + name + "\nspec:\n  type: local\n")
	b.WriteString("  kubernetes:\n    versions:\n    - version: 1.31.0\n    - version: 1.30.4\n")
	b.WriteString("  machineTypes:\n  - {name: m5.large, cpu: \"2\", gpu: \"0\", memory: 8Gi}\n  regions:\n  - name: eu-1\n  machineImages:\n")
	for image := range 30 {
		fmt.Fprintf(&b, "  - name: image-%d\n    versions:\n", image)
		for v := range 100 {
			fmt.Fprintf(&b, "    - version: %d.%d.0\n", v/10+1, v%10)
		}
	}
	return b.String()
}

// providerConfigProfile is a CloudProfile whose providerConfig carries a
// string of size bytes.
func providerConfigProfile(name string, size int) string {
	return "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: " + name +
		"\nspec:\n  type: local\n  machineTypes:\n  - {name: m5.large, cpu: \"2\", gpu: \"0\", memory: 8Gi}\n  regions:\n  - name: eu-1\n" +
		"  machineImages:\n  - name: gardenlinux\n    versions:\n    - version: 1443.3.0\n" +
		"  kubernetes:\n    versions:\n    - version: 1.31.0\n  providerConfig:\n    blob: " + strings.Repeat("x", size) + "\n"
}
