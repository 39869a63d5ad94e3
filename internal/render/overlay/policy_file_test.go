package overlay

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/propose"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/builders"
)

func TestAPlainDirectoryBuildSkipsVersioningPolicyFiles(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	policyYAML := "apiVersion: policy.profilesync.io/v1alpha1\nkind: VersioningPolicy\nrules:\n  notice: {severity: error, days: 30}\n"
	builders.WriteTree(t, root, map[string]string{
		policy.FileName:                      policyYAML,
		"profiles/" + policy.FileName:        policyYAML,
		"profiles/a.yaml":                    fmt.Sprintf(minimalCloudProfile, "a"),
		"profiles/nested/" + policy.FileName: policyYAML,
	})
	docs, err := buildWithDefaults(t, root, ".")
	g.Expect(err).NotTo(HaveOccurred())
	objects, problems := profile.DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty(), "no policy file is read as a profile")
	g.Expect(objects).To(HaveLen(1))
	g.Expect(objects[0].File).To(Equal("profiles/a.yaml"))
	g.Expect(policy.IsFileName("a.yaml")).To(BeFalse())
}

func TestAPlainDirectoryBuildSkipsTheRolloutFile(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	builders.WriteTree(t, root, map[string]string{
		rollout.FileName:  "apiVersion: rollout.profilesync.io/v1alpha1\nkind: Rollout\nlandscapes:\n- {name: root, path: .}\n",
		"profiles/a.yaml": fmt.Sprintf(minimalCloudProfile, "a"),
	})
	docs, err := buildWithDefaults(t, root, ".")
	g.Expect(err).NotTo(HaveOccurred())
	objects, problems := profile.DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty(), "the rollout file is not read as a profile")
	g.Expect(objects).To(HaveLen(1))
	g.Expect(IsSettingsFile(rollout.FileName)).To(BeTrue())
	g.Expect(IsSettingsFile(policy.FileName)).To(BeTrue())
	g.Expect(IsSettingsFile("a.yaml")).To(BeFalse())
}

func TestAPlainDirectoryBuildSkipsTheVersionsFile(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	builders.WriteTree(t, root, map[string]string{
		propose.FileName:  "apiVersion: versions.profilesync.io/v1alpha1\nkind: VersionSources\nsources: []\n",
		"profiles/a.yaml": fmt.Sprintf(minimalCloudProfile, "a"),
	})
	docs, err := buildWithDefaults(t, root, ".")
	g.Expect(err).NotTo(HaveOccurred())
	objects, problems := profile.DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty(), "the versions file is not read as a profile")
	g.Expect(objects).To(HaveLen(1))
	g.Expect(IsSettingsFile(propose.FileName)).To(BeTrue())
}
