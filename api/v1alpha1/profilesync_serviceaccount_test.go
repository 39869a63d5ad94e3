package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestProfileSyncServiceAccountNameIsAServiceAccountName: the API server
// refuses a spec.serviceAccountName that no ServiceAccount could have, so a
// typo fails at kubectl apply rather than at the first write.
func TestProfileSyncServiceAccountNameIsAServiceAccountName(t *testing.T) {
	rows := []struct {
		name      string
		account   string
		wantError string
	}{
		{name: "a plain name is accepted", account: "profiles-sync"},
		{name: "a dotted name is accepted, as ServiceAccounts allow", account: "team-a.profiles"},
		{name: "the longest name is accepted", account: strings.Repeat("a", 253)},
		{name: "a longer name is refused", account: strings.Repeat("a", 254), wantError: "spec.serviceAccountName: Too long"},
		{name: "upper case is refused", account: "Profiles", wantError: "spec.serviceAccountName: Invalid value"},
		{name: "a full username is refused", account: "system:serviceaccount:team-a:sync", wantError: "spec.serviceAccountName: Invalid value"},
		{name: "a name ending in a dash is refused", account: "sync-", wantError: "spec.serviceAccountName: Invalid value"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := validProfileSync()
			ps.Spec.ServiceAccountName = row.account
			err := k8sClient.Create(context.Background(), ps)
			if row.wantError == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(k8sClient.Delete(context.Background(), ps)).To(Succeed())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(row.wantError)))
		})
	}
}
