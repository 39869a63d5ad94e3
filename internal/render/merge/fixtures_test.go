package merge

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilesync/profilesync/test/builders"
)

// The shared builders of profiles, versions and lifecycles, by the names
// this package's tests use.
var (
	date                 = builders.Date
	strategy             = builders.Strategy
	stage                = builders.Stage
	plainVersion         = builders.PlainVersion
	deprecatedAPIVersion = builders.DeprecatedAPIVersion
	staged               = builders.Staged
	withNewest           = builders.WithNewest
	profile              = builders.Profile
	machineType          = builders.MachineType
	namespaced           = builders.Namespaced
)

const newestKubernetesVersion = builders.NewestKubernetesVersion

// errorFields renders each error as "path: type", which pins where a problem
// is reported and what kind it is without repeating every message.
func errorFields(errs field.ErrorList) []string {
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field+": "+e.Type.String())
	}
	return fields
}

// errorLines renders errors one per line, as the golden errors.txt files hold them.
func errorLines(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error())
		b.WriteString("\n")
	}
	return b.String()
}
