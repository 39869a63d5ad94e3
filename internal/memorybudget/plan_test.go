package memorybudget

import (
	"testing"

	. "github.com/onsi/gomega"
)

const (
	mi = int64(1) << 20
	gi = int64(1) << 30
)

func TestCheck(t *testing.T) {
	flag := func(bytes int64) Limit { return Limit{Bytes: bytes, Source: "--memory-budget"} }
	tests := []struct {
		name  string
		plan  Plan
		share int64
		// wantErr is the whole refusal, or empty when the plan fits.
		wantErr string
	}{{
		name:  "the shipped Deployment's 2 builds of 1Gi fit 3Gi, and the manager's share is what the builds and the headroom leave",
		plan:  Plan{Limit: flag(3 * gi), Builds: 2, BuildMemory: gi, Cache: DefaultCache},
		share: 3*gi - 2*gi - 307*mi,
	}, {
		name:  "a plan without a budget (no cgroup limit, no --memory-budget) is not checked and sets no soft limit",
		plan:  Plan{Builds: 4, BuildMemory: gi, Cache: DefaultCache},
		share: 0,
	}, {
		name: "4 builds of 1Gi in 512Mi are refused with the arithmetic, and only raising the limit can help",
		plan: Plan{Limit: flag(512 * mi), Builds: 4, BuildMemory: gi, Cache: DefaultCache},
		wantErr: "the flags do not fit the memory budget of 512Mi (--memory-budget): " +
			"256Mi for the manager + 128Mi of decoded revisions (--decoded-cache-size) + 4 builds (--max-concurrent-builds) × 1Gi each (--build-memory-limit) + 51Mi headroom (10%) = 4531Mi: " +
			"raise the memory limit (the container's, or --memory-budget) to at least 4977Mi",
	}, {
		name: "4 builds of 512Mi in 2Gi name the builds that fit and the memory each may have",
		plan: Plan{Limit: flag(2 * gi), Builds: 4, BuildMemory: 512 * mi, Cache: DefaultCache},
		wantErr: "the flags do not fit the memory budget of 2Gi (--memory-budget): " +
			"256Mi for the manager + 128Mi of decoded revisions (--decoded-cache-size) + 4 builds (--max-concurrent-builds) × 512Mi each (--build-memory-limit) + 204Mi headroom (10%) = 2636Mi: " +
			"lower --max-concurrent-builds to 2, or lower --build-memory-limit to 365Mi, or raise the memory limit (the container's, or --memory-budget) to at least 2702Mi",
	}, {
		name: "a cache too large for the rest names --decoded-cache-size",
		plan: Plan{Limit: flag(gi), Builds: 1, BuildMemory: 512 * mi, Cache: 256 * mi},
		wantErr: "the flags do not fit the memory budget of 1Gi (--memory-budget): " +
			"256Mi for the manager + 256Mi of decoded revisions (--decoded-cache-size) + 1 builds (--max-concurrent-builds) × 512Mi each (--build-memory-limit) + 102Mi headroom (10%) = 1126Mi: " +
			"lower --build-memory-limit to 410Mi, or lower --decoded-cache-size to 154Mi, or raise the memory limit (the container's, or --memory-budget) to at least 1137Mi",
	}, {
		name:  "a plan that fills the budget to the byte fits",
		plan:  Plan{Limit: flag(1000 * mi), Builds: 1, BuildMemory: 1000*mi - 256*mi - DefaultCache - 100*mi, Cache: DefaultCache},
		share: 1000*mi - (1000*mi - 256*mi - DefaultCache - 100*mi) - 100*mi,
	}, {
		name: "one byte more than the budget is refused, and the source of the budget is named",
		plan: Plan{Limit: Limit{Bytes: 1000 * mi, Source: "the container's memory limit, /sys/fs/cgroup/memory.max"},
			Builds: 1, BuildMemory: 1000*mi - 256*mi - DefaultCache - 100*mi + 1, Cache: DefaultCache},
		wantErr: "the flags do not fit the memory budget of 1000Mi (the container's memory limit, /sys/fs/cgroup/memory.max): " +
			"256Mi for the manager + 128Mi of decoded revisions (--decoded-cache-size) + 1 builds (--max-concurrent-builds) × 541065217 each (--build-memory-limit) + 100Mi headroom (10%) = 1048576001: " +
			"lower --build-memory-limit to 516Mi, or lower --decoded-cache-size to 127Mi, or raise the memory limit (the container's, or --memory-budget) to at least 1001Mi",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tt.plan.Check()
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(tt.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tt.plan.ManagerShare()).To(Equal(tt.share))
			g.Expect(tt.plan.ManagerShare()).To(BeNumerically(">=", int64(0)))
		})
	}
}

// TestEverySuggestionFits: the plan each refusal suggests passes the check,
// so following the message gets the manager started.
func TestEverySuggestionFits(t *testing.T) {
	g := NewWithT(t)
	for _, p := range []Plan{
		{Limit: Limit{Bytes: 2 * gi}, Builds: 4, BuildMemory: 512 * mi, Cache: DefaultCache},
		{Limit: Limit{Bytes: gi}, Builds: 1, BuildMemory: 512 * mi, Cache: 256 * mi},
		{Limit: Limit{Bytes: 512 * mi}, Builds: 4, BuildMemory: gi, Cache: DefaultCache},
		{Limit: Limit{Bytes: 3*gi + 7}, Builds: 7, BuildMemory: 999 * mi, Cache: 3 * mi},
	} {
		g.Expect(p.Check()).To(HaveOccurred())
		raised := p
		raised.Limit.Bytes = minimumBudget(p)
		g.Expect(raised.Check()).To(Succeed(), "%+v raised to %d", p, raised.Limit.Bytes)
		lessBudget := raised
		lessBudget.Limit.Bytes -= mi
		g.Expect(lessBudget.Check()).To(HaveOccurred(), "the minimum is the least whole MiB that fits: %+v", lessBudget)

		forBuilds := p.Limit.Bytes - p.Headroom() - ManagerBaseline - p.Cache
		if fit := int(forBuilds / p.BuildMemory); fit >= 1 {
			fewer := p
			fewer.Builds = fit
			g.Expect(fewer.Check()).To(Succeed())
		}
		if each := forBuilds / int64(p.Builds) / mi * mi; each >= minUsefulBuildMemory {
			smaller := p
			smaller.BuildMemory = each
			g.Expect(smaller.Check()).To(Succeed())
		}
	}
}

func TestGCPercent(t *testing.T) {
	tests := []struct {
		name string
		plan Plan
		want int
	}{{
		name: "with a budget the manager collects at ManagerGCPercent, bounded by its share as the soft limit",
		plan: Plan{Limit: Limit{Bytes: 3 * gi, Source: "--memory-budget"}, Builds: 2, BuildMemory: gi, Cache: DefaultCache},
		want: ManagerGCPercent,
	}, {
		name: "the smallest budget that fits still bounds the heap, and gets the same percent",
		plan: Plan{Limit: Limit{Bytes: minimumBudget(Plan{Builds: 2, BuildMemory: gi, Cache: DefaultCache})}, Builds: 2, BuildMemory: gi, Cache: DefaultCache},
		want: ManagerGCPercent,
	}, {
		name: "without a budget nothing bounds the heap, and the manager keeps Go's default",
		plan: Plan{Builds: 2, BuildMemory: gi, Cache: DefaultCache},
		want: 100,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.plan.GCPercent()).To(Equal(tt.want))
		})
	}
}
