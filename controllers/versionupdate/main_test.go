package versionupdate_test

import (
	"os"
	"testing"

	"github.com/profilesync/profilesync/controllers/versionupdate"
	"github.com/profilesync/profilesync/test/operatorsuite"
)

// TestMain runs the package's tests on the operator suite: one control plane
// and one manager with every controller, as in production.
func TestMain(m *testing.M) {
	os.Exit(operatorsuite.Run(m, versionupdate.UseSuite))
}
