// Package memorybudget is the operator's memory arithmetic: the budget it
// runs in (its container's cgroup memory limit, or --memory-budget), and
// whether what the flags let it use fits that budget:
//
//	budget ≥ manager baseline + decoded revisions cache + builds × memory of each + headroom
//
// The builds run in processes of their own (internal/sandbox), but in the
// manager's container, so the kernel counts them against the same limit. A
// manager whose flags do not fit is refused at start-up, with the arithmetic
// and the flag to change, instead of being killed by the kernel on the day
// the builds all run at once. It imports nothing of ours: internal/sandbox
// takes its flag names from here.
package memorybudget
