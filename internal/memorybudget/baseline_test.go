package memorybudget_test

import (
	"testing"

	"github.com/profilesync/profilesync/internal/memorybudget"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// TestTheManagerBaselineHoldsTheValidationMemo: the validation memo
// (profile.ValidationMemoBytes) is not a flag of the budget's arithmetic, so
// the baseline must hold it besides what the manager was measured to need.
func TestTheManagerBaselineHoldsTheValidationMemo(t *testing.T) {
	if need := memorybudget.MeasuredManager + profile.ValidationMemoBytes; need > memorybudget.ManagerBaseline {
		t.Errorf("the manager's measured %d MiB and the validation memo's %d MiB exceed ManagerBaseline's %d MiB",
			memorybudget.MeasuredManager>>20, profile.ValidationMemoBytes>>20, memorybudget.ManagerBaseline>>20)
	}
}
