package versionupdate

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func TestTheStatusReportsTheNewestVersionsAndBoundedMessages(t *testing.T) {
	long := strings.Repeat("é", v1alpha1.MaxReportedMessage) // two bytes each
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"the newest versions come first, by semver, not as listed", newest([]string{"1.9.0", "1.10.0", "1.10.1", "v1.2"}, 3), []string{"1.10.1", "1.10.0", "1.9.0"}},
		{"fewer versions than asked are all reported", newest([]string{"1592.5"}, 10), []string{"1592.5"}},
		{"what is no semver is not reported", newest([]string{"latest"}, 10), []string{}},
		{"a short message is kept as it is", bounded("source kubernetes: 401"), "source kubernetes: 401"},
		{"a long message is cut to the bound", len(bounded(long)) <= v1alpha1.MaxReportedMessage, true},
		{"a long message is cut on a rune boundary and says so", utf8.ValidString(bounded(long)) && strings.HasSuffix(bounded(long), " …"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.got).To(Equal(tt.want))
		})
	}
}

func TestTheFirstCreatedVersionUpdateClaimsABranch(t *testing.T) {
	at := func(second int64, namespace, name string) *v1alpha1.VersionUpdate {
		return &v1alpha1.VersionUpdate{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			CreationTimestamp: metav1.Unix(1_800_000_000+second, 0)}}
	}
	tests := []struct {
		name string
		a, b *v1alpha1.VersionUpdate
		want bool
	}{
		{"the one created earlier claims first, whatever its name", at(0, "b", "z"), at(1, "a", "a"), true},
		{"the one created later does not", at(1, "a", "a"), at(0, "b", "z"), false},
		{"at the same second, the first namespace claims first", at(0, "a", "z"), at(0, "b", "a"), true},
		{"at the same second in one namespace, the first name claims first", at(0, "a", "x"), at(0, "a", "y"), true},
		{"at the same second in one namespace, the later name does not", at(0, "a", "y"), at(0, "a", "x"), false},
		{"none claims before itself", at(0, "a", "x"), at(0, "a", "x"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(claimsFirst(tt.a, tt.b)).To(Equal(tt.want))
		})
	}
}
