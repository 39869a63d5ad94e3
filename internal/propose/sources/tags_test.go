package sources

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/propose"
	"github.com/profilesync/profilesync/test/gitserver"
)

// sourceWith decodes a versions file of one source: its repository lines
// (git: or oci:), then more of its fields.
func sourceWith(repository, fields string) *propose.Source {
	feed := "  feeds: [{file: base/cloudprofiles.yaml, cloudProfile: aws}]\n"
	if strings.HasPrefix(repository, "  oci:") {
		feed = "  feeds: [{file: base/cloudprofiles.yaml, cloudProfile: aws, machineImage: gardenlinux}]\n"
	}
	f, err := propose.Decode(propose.FileName, []byte(versionsHeader+"sources:\n- name: kubernetes\n"+repository+fields+feed))
	if err != nil {
		panic(err)
	}
	return &f.Sources[0]
}

func TestASourceWhoseTagsAreNoneOfItsVersionsIsNamedWithTheRuleTheyFail(t *testing.T) {
	// kubernetesRepo's tags: v1.34.2, v1.34.3, v1.35.0-rc.1 and latest.
	_, gitURL := kubernetesRepo(t, gitserver.Options{}, true)
	// The registry's: 1592.4, 1592.5, 1592.5-dev and latest.
	ociRepository := imageRegistry(t, "", "", map[string]time.Time{
		"1592.4": at("2026-11-01T08:00:00Z"), "1592.5": at("2026-11-26T09:30:00Z"),
		"1592.5-dev": at("2026-11-27T00:00:00Z"), "latest": at("2026-11-27T00:00:00Z"),
	})
	git := "  git: {url: \"" + gitURL + "\"}\n"
	oci := "  oci: {repository: \"" + ociRepository + "\"}\n"
	list := func(s *propose.Source) error {
		var err error
		if s.Git != nil {
			_, err = ListGit(context.Background(), s, GitOptions{})
		} else {
			_, err = ListOCI(context.Background(), s, OCIOptions{})
		}
		return err
	}
	tests := []struct {
		name   string
		source *propose.Source
		want   string
	}{
		{name: "git: a tag pattern that matches no tag", source: sourceWith(git, "  tagPattern: '^release-(.*)$'\n"),
			want: `source kubernetes: listing the tags of ` + gitURL + `: no tag is one of the source's versions: none of its 4 tags matches tagPattern ^release-(.*)$ ("latest" is one)`},
		{name: "git: a tag pattern that matches pre-releases only", source: sourceWith(git, "  tagPattern: '^v(\\d+\\.\\d+\\.\\d+-rc\\.\\d+)$'\n"),
			want: `source kubernetes: listing the tags of ` + gitURL + `: no tag is one of the source's versions: 1 tags match tagPattern, and none is a release version, semver without pre-release or build ("v1.35.0-rc.1" is one)`},
		{name: "git: a semver range that no tag is in", source: sourceWith(git, "  versions: \">= 1.40\"\n"),
			want: `source kubernetes: listing the tags of ` + gitURL + `: no tag is one of the source's versions: 2 tags are release versions, and none is in the range versions ">=1.40" (the newest is 1.34.3)`},
		{name: "oci: a tag pattern that matches no tag", source: sourceWith(oci, "  tagPattern: '^gardenlinux-(.*)$'\n"),
			want: `source kubernetes: listing the tags of ` + ociRepository + `: no tag is one of the source's versions: none of its 4 tags matches tagPattern ^gardenlinux-(.*)$ ("1592.4" is one)`},
		{name: "oci: a semver range that no tag is in", source: sourceWith(oci, "  versions: \"< 1000\"\n"),
			want: `source kubernetes: listing the tags of ` + ociRepository + `: no tag is one of the source's versions: 2 tags are release versions, and none is in the range versions "<1000" (the newest is 1592.5)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := list(tt.source)
			g.Expect(err).To(MatchError(tt.want))
			g.Expect(errors.Is(err, ErrNoVersions)).To(BeTrue())
		})
	}
}

func TestTheTagTallyNamesTheFirstRuleEveryTagFails(t *testing.T) {
	source := sourceWith("  git: {url: \"https://example.invalid/k.git\"}\n", "  versions: \">= 1.34\"\n")
	tests := []struct {
		name string
		tags []string
		want string
	}{
		{name: "no tags at all", want: "no tag is one of the source's versions: the repository has no tags"},
		{name: "the least tag that fails the pattern is the example, whatever the order", tags: []string{"zeta", "alpha", "v1.2"},
			want: `no tag is one of the source's versions: none of its 3 tags matches tagPattern ^v(\d+\.\d+\.\d+)$ ("alpha" is one)`},
		{name: "a long tag is cut", tags: []string{strings.Repeat("x", 100)},
			want: `no tag is one of the source's versions: none of its 1 tags matches tagPattern ^v(\d+\.\d+\.\d+)$ ("` + strings.Repeat("x", maxExampleTagLen) + `"… is one)`},
		{name: "the newest version out of the range is named", tags: []string{"v1.20.1", "v1.33.9", "v1.9.0", "latest"},
			want: `no tag is one of the source's versions: 3 tags are release versions, and none is in the range versions ">=1.34" (the newest is 1.33.9)`},
		{name: "one version is enough", tags: []string{"latest", "v1.34.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var tally tagTally
			for _, tag := range tt.tags {
				v, verdict := source.Classify(tag)
				tally.add(tag, v, verdict)
			}
			err := tally.noVersions(source)
			if tt.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tt.want))
		})
	}
}
