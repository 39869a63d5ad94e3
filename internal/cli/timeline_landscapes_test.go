package cli

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// timelineRollout is the diff fixture's head with dev before prod.
const timelineRollout = rolloutHeader + "- {name: dev, path: overlays/dev}\n- {name: prod, path: overlays/prod, after: [dev], soak: 1d}\n"

func TestTimelineOfTheLandscapesOfTheRolloutFile(t *testing.T) {
	head := headWithRollout(t, timelineRollout)
	window := []string{"--root", head, "--at", diffTime, "--until", "2027-01-16T00:00:00Z"}
	for _, tt := range []struct {
		name, golden string
		args         []string
	}{
		{"every landscape as a table", "timeline-landscapes.txt", []string{"--all-landscapes"}},
		{"every landscape as an iCalendar feed", "timeline.ics", []string{"--all-landscapes", "--output", "ics"}},
		{"the landscapes named, in the file's order", "timeline-landscapes.txt", []string{"--landscape", "prod", "--landscape", "dev"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, "timeline", "", append(window, tt.args...)...)
			g.Expect(status).To(Equal(exitOK), stderr)
			assertGolden(t, filepath.Join("testdata", "rollout", tt.golden), stdout)
		})
	}

	g := NewWithT(t)
	status, feed, stderr := run(t, "timeline", "", append(window, "--all-landscapes", "--output", "ics")...)
	g.Expect(status).To(Equal(exitOK), stderr)
	titles := map[string]int{}
	for _, line := range strings.Split(strings.ReplaceAll(feed, "\r\n ", ""), "\r\n") {
		if title, ok := strings.CutPrefix(line, "SUMMARY:"); ok {
			titles[title]++
		}
	}
	g.Expect(titles).To(HaveKey("prod: CloudProfile/aws: kubernetes 1.33.5 supported → deprecated"))
	g.Expect(titles).To(HaveKey("prod: NamespacedCloudProfile/team-payments/aws-payments: kubernetes 1.33.5 supported → deprecated"))
	for title, count := range titles {
		g.Expect(count).To(Equal(1), "one event titled %q: each title names its object", title)
	}

	status, stdout, stderr := run(t, "timeline", "", append(window, "--landscape", "prod")...)
	g.Expect(status).To(Equal(exitOK), stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	g.Expect(lines[0]).To(MatchRegexp(`^WHEN\s+LANDSCAPE\s+PROFILE\s+KIND OF VERSION\s+VERSION\s+FROM → TO$`))
	g.Expect(len(lines)).To(BeNumerically(">", 1))
	for _, line := range lines[1:] {
		g.Expect(strings.Fields(line)[1]).To(Equal("prod"))
	}
}

func TestTimelineLandscapeErrors(t *testing.T) {
	head := headWithRollout(t, timelineRollout)
	noRollout := t.TempDir()
	copyTree(t, diffFixturePR, noRollout)
	tests := []struct {
		name   string
		args   []string
		status int
		stderr string
	}{
		{"an unknown landscape", []string{"--root", head, "--landscape", "stagin"}, exitUsage, `--landscape "stagin": profilesync-rollout.yaml lists dev, prod`},
		{"no rollout file", []string{"--root", noRollout, "--all-landscapes"}, exitUsage, "has no profilesync-rollout.yaml"},
		{"-f with a landscape", []string{"--root", head, "--landscape", "dev", "-f", filepath.Join(head, "base")}, exitUsage, "give no -f"},
		{"--policy with ics", []string{"-f", filepath.Join(head, "base"), "--policy", "p.yaml", "-o", "ics"}, exitUsage, "--policy lists policy findings"},
		{"an unknown format", []string{"-f", filepath.Join(head, "base"), "-o", "csv"}, exitUsage, `not a timeline format: "csv"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, "timeline", "", tt.args...)
			g.Expect(status).To(Equal(tt.status))
			g.Expect(stdout).To(BeEmpty())
			g.Expect(stderr).To(ContainSubstring(tt.stderr))
		})
	}
}

func TestTimelineICSOfInputsHasNoLandscape(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "timeline", "", "-f", filepath.Join(profilesRepo, "base"),
		"--at", "2025-06-01T00:00:00Z", "--until", "2025-10-01T00:00:00Z", "-o", "ics")
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stdout).To(HavePrefix("BEGIN:VCALENDAR\r\n"))
	g.Expect(stdout).To(ContainSubstring("X-WR-CALNAME:ProfileSync lifecycle transitions\r\n"))
	g.Expect(stdout).To(ContainSubstring("DTSTAMP:20250601T000000Z\r\n"), "the stamp is --at")
	g.Expect(strings.Count(stdout, "BEGIN:VEVENT")).To(BeNumerically(">", 0))
}

func TestICSFeedFoldsAndEscapes(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tr := landscapeTransition{landscape: "prod-eu", transition: transition{
		at: at, profile: "NamespacedCloudProfile/team-payments,eu;x/aws-payments-with-a-rather-long-name",
		subject: "gardenlinux\\dev", version: "1592.2.0", from: v1alpha1.ClassificationSupported, to: v1alpha1.ClassificationDeprecated,
	}}
	var out bytes.Buffer
	g.Expect(writeTransitionsICS(&out, "feed, with; punctuation\nand a newline", at.Add(-time.Hour), []landscapeTransition{tr})).To(Succeed())
	feed := out.String()

	g.Expect(feed).To(HaveSuffix("END:VCALENDAR\r\n"))
	g.Expect(strings.Count(feed, "\n")).To(Equal(strings.Count(feed, "\r\n")), "every line ends with CRLF")
	scanner := bufio.NewScanner(strings.NewReader(feed))
	for scanner.Scan() {
		line := strings.TrimSuffix(scanner.Text(), "\r")
		g.Expect(len(line)).To(BeNumerically("<=", 75), "line %q is folded at 75 octets", line)
		g.Expect(utf8.ValidString(line)).To(BeTrue(), "folding never cuts a character: %q", line)
	}
	unfolded := strings.ReplaceAll(feed, "\r\n ", "")
	g.Expect(unfolded).To(ContainSubstring("X-WR-CALNAME:feed\\, with\\; punctuation\\nand a newline\r\n"))
	g.Expect(unfolded).To(ContainSubstring("SUMMARY:prod-eu: NamespacedCloudProfile/team-payments\\,eu\\;x/aws-payments-with-a-rather-long-name: gardenlinux\\\\dev 1592.2.0 supported → deprecated\r\n"))
	g.Expect(unfolded).To(ContainSubstring("DESCRIPTION:prod-eu: NamespacedCloudProfile/team-payments\\,eu\\;x/aws-payments-with-a-rather-long-name: " +
		"gardenlinux\\\\dev 1592.2.0 moves from supported to deprecated at 2026-12-01T00:00:00Z.\r\n"))
	g.Expect(unfolded).To(ContainSubstring("DTSTAMP:20261130T230000Z\r\nDTSTART:20261201T000000Z\r\n"))

	moved := tr
	moved.at = at.Add(48 * time.Hour)
	g.Expect(transitionUID(moved)).To(Equal(transitionUID(tr)), "a transition whose date moves keeps its UID")
	other := tr
	other.landscape = "prod-us"
	g.Expect(transitionUID(other)).NotTo(Equal(transitionUID(tr)), "each landscape's transition has its own UID")
}
