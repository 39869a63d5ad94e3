package memorybudget

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The flags of the arithmetic, named in every refusal: the manager binds
// them, and internal/sandbox takes the names of the builds' own from here.
const (
	BudgetFlag      = "memory-budget"
	CacheFlag       = "decoded-cache-size"
	BuildsFlag      = "max-concurrent-builds"
	BuildMemoryFlag = "build-memory-limit"
)

// ManagerBaseline is what the manager needs besides its caches of revisions:
// its informers' copies of the profiles and ProfileSyncs, the Git checkouts
// it reads, a sync's live profiles and the build answers it decodes. 148 MiB
// measured with six tenant ProfileSyncs on a 21 MB revision, kept decoded
// revisions excluded (controllers' TestSixTenantsOnALargeRefusedRevisionStayInTheBudget
// measures it again). It also holds the validation memo's bound
// (profile.ValidationMemoBytes, the outcomes of the lifecycle rules and
// merged specs kept across revisions), which
// TestTheManagerBaselineHoldsTheValidationMemo checks against the 148 MiB.
const ManagerBaseline int64 = 256 << 20

// MeasuredManager is the manager's measured need that ManagerBaseline
// rounds up, before the validation memo.
const MeasuredManager int64 = 148 << 20

// DefaultCache is --decoded-cache-size's default: the decoded revisions of
// every ProfileSync together. A decoded revision takes up to 13 times its
// YAML (1.9 MB of profiles of many small versions decode to 25 MB), so the
// default keeps about 10 MB of YAML; a landscape larger than that is built
// at every sync until the cache, and the budget, are raised.
const DefaultCache int64 = 128 << 20

// HeadroomPercent of the budget is left unplanned: the Go runtime's own
// overshoot of its soft limit, thread stacks, the builds' pages outside their
// heap limit (code, stacks), and the page cache the kernel charges to the
// container.
const HeadroomPercent = 10

// Limit is a memory budget and where it comes from.
type Limit struct {
	// Bytes is the budget; zero means none is known (no cgroup limit and no
	// --memory-budget): nothing is checked.
	Bytes int64
	// Source says where Bytes comes from, for the refusal: "--memory-budget",
	// or the cgroup file read.
	Source string
}

// Plan is what the manager's flags let it use.
type Plan struct {
	Limit Limit
	// Builds is --max-concurrent-builds, BuildMemory --build-memory-limit:
	// each build's process may grow to BuildMemory, all at once.
	Builds      int
	BuildMemory int64
	// Cache is --decoded-cache-size, the bound of the decoded revisions
	// kept between syncs.
	Cache int64
}

// Headroom is the part of the budget left unplanned (HeadroomPercent).
// It is rounded down to whole MiB, so the refusal's arithmetic reads as the
// flags are written.
func (p Plan) Headroom() int64 { return p.Limit.Bytes / 100 * HeadroomPercent / mebibyte * mebibyte }

const mebibyte = 1 << 20

// needed is everything the plan reserves, headroom included.
func (p Plan) needed() int64 {
	return ManagerBaseline + p.Cache + int64(p.Builds)*p.BuildMemory + p.Headroom()
}

// ManagerShare is what the manager's own Go heap may use: the budget less the
// builds and the headroom. The manager sets it as its soft memory limit
// (GOMEMLIMIT), so the Go runtime collects harder before the kernel would kill
// the container. Zero when no budget is known.
func (p Plan) ManagerShare() int64 {
	if p.Limit.Bytes <= 0 {
		return 0
	}
	return p.Limit.Bytes - int64(p.Builds)*p.BuildMemory - p.Headroom()
}

// Check refuses a plan that does not fit its budget, with the arithmetic and
// the flags that make it fit. A plan without a budget is not checked.
func (p Plan) Check() error {
	if p.Limit.Bytes <= 0 {
		return nil
	}
	needed := p.needed()
	if needed <= p.Limit.Bytes {
		return nil
	}
	var fixes []string
	// What is left for the builds once the rest is reserved.
	forBuilds := p.Limit.Bytes - p.Headroom() - ManagerBaseline - p.Cache
	if p.BuildMemory > 0 {
		if fit := forBuilds / p.BuildMemory; fit >= 1 && fit < int64(p.Builds) {
			fixes = append(fixes, fmt.Sprintf("lower --%s to %d", BuildsFlag, fit))
		}
	}
	if p.Builds > 0 {
		// Whole MiB, so the suggestion can be typed as it is.
		if each := forBuilds / int64(p.Builds) / mebibyte * mebibyte; each >= minUsefulBuildMemory && each < p.BuildMemory {
			fixes = append(fixes, fmt.Sprintf("lower --%s to %s", BuildMemoryFlag, quantity(each)))
		}
	}
	if excess := needed - p.Limit.Bytes; p.Cache-excess >= mebibyte {
		fixes = append(fixes, fmt.Sprintf("lower --%s to %s", CacheFlag, quantity((p.Cache-excess)/mebibyte*mebibyte)))
	}
	// The budget that holds the plan as it is, headroom included.
	fixes = append(fixes, fmt.Sprintf("raise the memory limit (the container's, or --%s) to at least %s", BudgetFlag, quantity(minimumBudget(p))))
	return fmt.Errorf("the flags do not fit the memory budget of %s (%s): "+
		"%s for the manager + %s of decoded revisions (--%s) + %d builds (--%s) × %s each (--%s) + %s headroom (%d%%) = %s: %s",
		quantity(p.Limit.Bytes), p.Limit.Source,
		quantity(ManagerBaseline), quantity(p.Cache), CacheFlag, p.Builds, BuildsFlag, quantity(p.BuildMemory), BuildMemoryFlag,
		quantity(p.Headroom()), HeadroomPercent, quantity(needed), strings.Join(fixes, ", or "))
}

// minUsefulBuildMemory is the smallest build memory Check suggests: below it
// no landscape builds (kustomize alone takes tens of MiB).
const minUsefulBuildMemory = 64 << 20

// minimumBudget is the smallest budget, in whole MiB, that holds the plan:
// planned ≤ budget − headroom, where the headroom, a share of the budget
// rounded down to MiB, lets the least budget lie a little below
// planned × 100 / (100 − HeadroomPercent).
func minimumBudget(p Plan) int64 {
	planned := ManagerBaseline + p.Cache + int64(p.Builds)*p.BuildMemory
	budget := max(mebibyte, planned*100/(100-HeadroomPercent)/mebibyte*mebibyte-2*mebibyte)
	for (Plan{Limit: Limit{Bytes: budget}, Builds: p.Builds, BuildMemory: p.BuildMemory, Cache: p.Cache}).needed() > budget {
		budget += mebibyte
	}
	return budget
}

// quantity writes a size as Kubernetes does (512Mi, 1Gi), the way the flags
// take it.
func quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
