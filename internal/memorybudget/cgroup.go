package memorybudget

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
)

// The files that hold a cgroup's memory limit.
const (
	cgroupV2Limit = "memory.max"
	cgroupV1Limit = "memory.limit_in_bytes"
)

// v1Unlimited: cgroup v1 writes "no limit" as the largest page-aligned
// int64 (9223372036854771712); anything this large is no limit either.
const v1Unlimited = math.MaxInt64 / 2

// ContainerLimit is the memory limit of the cgroup the process runs in, read
// from the files under root ("/" in production; a test's directory in
// tests): /proc/self/cgroup names the process's cgroup, and its limit is
// sys/fs/cgroup/<cgroup>/memory.max (cgroup v2) or
// sys/fs/cgroup/memory/<cgroup>/memory.limit_in_bytes (v1). In a container
// with its own cgroup namespace the mount's root is the container's cgroup
// itself, so the file at the mount's root is read when the path under it is
// missing. A Limit of zero Bytes means no limit ("max", or v1's largest
// value), or no cgroup file to read (not Linux, or no memory controller).
func ContainerLimit(root string) (Limit, error) {
	fsys := os.DirFS(root)
	membership, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		return Limit{}, nil
	}
	if err != nil {
		return Limit{}, fmt.Errorf("read the process's cgroup: %w", err)
	}
	v2Path, v1Path, hasV1 := cgroupPaths(membership)
	// The memory controller is v1's when a v1 hierarchy has it (hybrid
	// hosts mount both), else v2's.
	if hasV1 {
		return readLimit(fsys, root, []string{
			path.Join("sys/fs/cgroup/memory", v1Path, cgroupV1Limit),
			path.Join("sys/fs/cgroup/memory", cgroupV1Limit),
		})
	}
	return readLimit(fsys, root, []string{
		path.Join("sys/fs/cgroup", v2Path, cgroupV2Limit),
		path.Join("sys/fs/cgroup", cgroupV2Limit),
	})
}

// cgroupPaths reads /proc/self/cgroup: the v2 cgroup ("0::<path>") and the
// v1 cgroup of the memory controller ("<id>:...memory...:<path>").
func cgroupPaths(membership []byte) (v2, v1 string, hasV1 bool) {
	scanner := bufio.NewScanner(bytes.NewReader(membership))
	for scanner.Scan() {
		fields := strings.SplitN(scanner.Text(), ":", 3)
		if len(fields) != 3 {
			continue
		}
		// path.Join keeps the path under the mount: "/../x" stays "x".
		cgroup := strings.TrimPrefix(path.Join("/", fields[2]), "/")
		switch {
		case fields[0] == "0" && fields[1] == "":
			v2 = cgroup
		case containsController(fields[1], "memory"):
			v1, hasV1 = cgroup, true
		}
	}
	return v2, v1, hasV1
}

func containsController(list, controller string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == controller {
			return true
		}
	}
	return false
}

// readLimit reads the first of candidates that exists.
func readLimit(fsys fs.FS, root string, candidates []string) (Limit, error) {
	for _, name := range candidates {
		content, err := fs.ReadFile(fsys, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		source := path.Join(root, name)
		if err != nil {
			return Limit{}, fmt.Errorf("read the memory limit: %w", err)
		}
		limit, err := parseLimit(string(content))
		if err != nil {
			return Limit{}, fmt.Errorf("%s: %w", source, err)
		}
		if limit == 0 {
			return Limit{}, nil
		}
		return Limit{Bytes: limit, Source: "the container's memory limit, " + source}, nil
	}
	return Limit{}, nil
}

// parseLimit reads a cgroup memory limit file: "max" (v2) or a number of
// bytes; zero means no limit.
func parseLimit(content string) (int64, error) {
	value := strings.TrimSpace(content)
	if value == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a memory limit (a number of bytes or \"max\"): %q", value)
	}
	if n >= v1Unlimited {
		return 0, nil
	}
	return int64(n), nil
}
