package memorybudget

// ManagerGCPercent is the manager's GOGC when it runs within a budget.
// The manager allocates many times what it keeps (each sync decodes a
// build's answer, renders every profile's status, encodes each apply), and
// at Go's default of 100 its collector took 14 to 20 % of its CPU
// (docs/performance.md, "The manager's collector"). Collecting at twice
// the live heap instead of once is bounded by the budget, not by the
// percent: the manager's share is its soft memory limit (ManagerShare),
// and the runtime collects as hard as it must when the heap nears it,
// whatever GOGC says. Without a budget nothing bounds the heap, and the
// manager keeps Go's default.
const ManagerGCPercent = 200

// GCPercent is the GOGC the manager runs with under the plan, unless the
// environment sets GOGC, which the runtime already honours:
// ManagerGCPercent with a budget, Go's default without one.
func (p Plan) GCPercent() int {
	if p.ManagerShare() <= 0 {
		return goDefaultGCPercent
	}
	return ManagerGCPercent
}

// goDefaultGCPercent is the runtime's GOGC when nothing sets it.
const goDefaultGCPercent = 100
