package render

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

func TestAPlainDirectoryBuildSkipsVersioningPolicyFiles(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	policy := "apiVersion: policy.profilesync.io/v1alpha1\nkind: VersioningPolicy\nrules:\n  notice: {severity: error, days: 30}\n"
	writeTree(t, root, map[string]string{
		PolicyFileName:                      policy,
		"profiles/" + PolicyFileName:        policy,
		"profiles/a.yaml":                   fmt.Sprintf(minimalCloudProfile, "a"),
		"profiles/nested/" + PolicyFileName: policy,
	})
	docs, err := buildWithDefaults(t, root, ".")
	g.Expect(err).NotTo(HaveOccurred())
	objects, problems := DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty(), "no policy file is read as a profile")
	g.Expect(objects).To(HaveLen(1))
	g.Expect(objects[0].File).To(Equal("profiles/a.yaml"))
	g.Expect(IsPolicyFile("a.yaml")).To(BeFalse())
}

func TestAPlainDirectoryBuildSkipsTheRolloutFile(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		RolloutFileName:   "apiVersion: rollout.profilesync.io/v1alpha1\nkind: Rollout\nlandscapes:\n- {name: root, path: .}\n",
		"profiles/a.yaml": fmt.Sprintf(minimalCloudProfile, "a"),
	})
	docs, err := buildWithDefaults(t, root, ".")
	g.Expect(err).NotTo(HaveOccurred())
	objects, problems := DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty(), "the rollout file is not read as a profile")
	g.Expect(objects).To(HaveLen(1))
	g.Expect(IsSettingsFile(RolloutFileName)).To(BeTrue())
	g.Expect(IsSettingsFile(PolicyFileName)).To(BeTrue())
	g.Expect(IsSettingsFile("a.yaml")).To(BeFalse())
}
