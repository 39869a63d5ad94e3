package memorybudget

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestContainerLimit(t *testing.T) {
	const (
		v2Self    = "0::/kubepods/burstable/pod1/ctr\n"
		v1Self    = "12:pids:/kubepods/pod1/ctr\n4:memory:/kubepods/pod1/ctr\n0::/\n"
		v1Grouped = "7:cpu,cpuacct:/\n5:hugetlb,memory:/docker/abc\n"
	)
	tests := []struct {
		name   string
		files  map[string]string
		want   int64
		source string
		err    string
	}{{
		name:   "cgroup v2 reads memory.max of the process's cgroup",
		files:  map[string]string{"proc/self/cgroup": v2Self, "sys/fs/cgroup/kubepods/burstable/pod1/ctr/memory.max": "536870912\n"},
		want:   512 << 20,
		source: "sys/fs/cgroup/kubepods/burstable/pod1/ctr/memory.max",
	}, {
		name: "cgroup v2 in a container's own cgroup namespace reads memory.max at the mount's root",
		files: map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "2147483648\n",
			"sys/fs/cgroup/cgroup.controllers": "cpu memory\n"},
		want:   2 << 30,
		source: "sys/fs/cgroup/memory.max",
	}, {
		name:  "cgroup v2 \"max\" means no limit",
		files: map[string]string{"proc/self/cgroup": v2Self, "sys/fs/cgroup/kubepods/burstable/pod1/ctr/memory.max": "max\n"},
	}, {
		name:   "cgroup v1 reads memory.limit_in_bytes of the memory controller's cgroup",
		files:  map[string]string{"proc/self/cgroup": v1Self, "sys/fs/cgroup/memory/kubepods/pod1/ctr/memory.limit_in_bytes": "1073741824\n"},
		want:   1 << 30,
		source: "sys/fs/cgroup/memory/kubepods/pod1/ctr/memory.limit_in_bytes",
	}, {
		name: "cgroup v1 whose mount is the container's own cgroup reads the file at the mount's root, with the controller among others",
		files: map[string]string{"proc/self/cgroup": v1Grouped, "sys/fs/cgroup/memory/memory.limit_in_bytes": "805306368\n",
			"sys/fs/cgroup/memory.max": "1\n"},
		want:   768 << 20,
		source: "sys/fs/cgroup/memory/memory.limit_in_bytes",
	}, {
		name:  "cgroup v1's largest value means no limit",
		files: map[string]string{"proc/self/cgroup": v1Self, "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"},
	}, {
		name:  "no memory limit file (no memory controller) is no limit",
		files: map[string]string{"proc/self/cgroup": v2Self},
	}, {
		name: "no /proc (not Linux) is no limit",
	}, {
		name:  "a cgroup path that climbs out of the mount stays under it",
		files: map[string]string{"proc/self/cgroup": "0::/../../etc\n", "sys/fs/cgroup/etc/memory.max": "1048576\n"},
		want:  1 << 20, source: "sys/fs/cgroup/etc/memory.max",
	}, {
		name:  "a limit that is no number is an error naming the file",
		files: map[string]string{"proc/self/cgroup": v2Self, "sys/fs/cgroup/kubepods/burstable/pod1/ctr/memory.max": "lots\n"},
		err:   `sys/fs/cgroup/kubepods/burstable/pod1/ctr/memory.max: not a memory limit (a number of bytes or "max"): "lots"`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			for name, content := range tt.files {
				g.Expect(os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755)).To(Succeed())
				g.Expect(os.WriteFile(filepath.Join(root, name), []byte(content), 0o600)).To(Succeed())
			}
			limit, err := ContainerLimit(root)
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(limit.Bytes).To(Equal(tt.want))
			if tt.want == 0 {
				g.Expect(limit.Source).To(BeEmpty())
				return
			}
			g.Expect(limit.Source).To(Equal("the container's memory limit, " + filepath.Join(root, tt.source)))
		})
	}
}

// FuzzParseLimit: whatever a limit file holds, parseLimit returns a
// non-negative limit or an error, never panics.
func FuzzParseLimit(f *testing.F) {
	for _, seed := range []string{"max\n", "536870912\n", "9223372036854771712", "-1", "", " 12 "} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		n, err := parseLimit(content)
		if err == nil && n < 0 {
			t.Fatalf("parseLimit(%q) = %d", content, n)
		}
	})
}
