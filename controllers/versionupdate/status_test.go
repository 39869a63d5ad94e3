package versionupdate

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"

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
