// Package procstat reads what the benchmarks measure of a process from
// /proc (Linux): its CPU time, and the child processes envtest starts.
// Tests and benchmarks only.
package procstat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux for every architecture Go supports).
const clockTicks = 100

// CPUSeconds is the process's CPU seconds so far, user and system; with
// waitedChildren, those of the children it has waited for too (cutime and
// cstime: ProfileSync's build children, each waited for when its build
// ends).
func CPUSeconds(pid int, waitedChildren bool) (float64, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	// state is the first field: utime and stime are the 12th and 13th,
	// cutime and cstime the 14th and 15th.
	last := 13
	if waitedChildren {
		last = 15
	}
	if len(fields) < last {
		return 0, fmt.Errorf("/proc/%d/stat has %d fields after the command, want %d", pid, len(fields), last)
	}
	var ticks float64
	for _, field := range fields[11:last] {
		t, err := strconv.ParseFloat(field, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
		}
		ticks += t
	}
	return ticks / clockTicks, nil
}

// ChildProcess is the PID of this process's only child with the command
// name: envtest starts kube-apiserver and etcd as children.
func ChildProcess(name string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	self := strconv.Itoa(os.Getpid())
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		command, fields, ok := splitStat(stat)
		if ok && command == name && len(fields) > 1 && fields[1] == self {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("want one child process %s, found %d", name, len(found))
	}
	return found[0], nil
}

// statFields are the fields of /proc/<pid>/stat after the command name.
func statFields(pid int) ([]string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, fmt.Errorf("read the CPU time of process %d: %w", pid, err)
	}
	_, fields, ok := splitStat(stat)
	if !ok {
		return nil, fmt.Errorf("/proc/%d/stat: no command in parentheses", pid)
	}
	return fields, nil
}

// splitStat splits a /proc/<pid>/stat line into the command name, which may
// hold spaces and is in parentheses, and the fields after it.
func splitStat(stat []byte) (command string, fields []string, ok bool) {
	open, end := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
	if open < 0 || end < open {
		return "", nil, false
	}
	return string(stat[open+1 : end]), strings.Fields(string(stat[end+1:])), true
}
