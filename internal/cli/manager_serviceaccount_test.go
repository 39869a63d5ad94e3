package cli

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestDefaultServiceAccountTakesAServiceAccountName(t *testing.T) {
	g := NewWithT(t)
	flags, status, _, stderr := runWithManager(t, nil, "manager", "--default-service-account=profiles-sync")
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(flags.defaultSA).To(Equal("profiles-sync"))

	flags, status, _, _ = runWithManager(t, nil)
	g.Expect(status).To(Equal(exitOK))
	g.Expect(flags.defaultSA).To(BeEmpty(), "tenants write as the operator unless the flag is given")

	flags, status, stdout, stderr := runWithManager(t, nil, "--default-service-account=system:serviceaccount:team-a:sync")
	g.Expect(status).To(Equal(exitUsage))
	g.Expect(flags).To(BeNil())
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(HavePrefix(`profilesync: invalid argument "system:serviceaccount:team-a:sync" for "--default-service-account" flag: not a ServiceAccount name: `))
}
