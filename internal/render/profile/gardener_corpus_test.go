package profile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// gardenerCorpus is the directory of real Gardener profiles, each copied
// from an upstream repository with a header naming its source.
const gardenerCorpus = "../../../test/testdata/gardener"

// sourceCommit finds the commit in a corpus file's header comment, so that
// every fixture can be traced back to the exact upstream version.
var sourceCommit = regexp.MustCompile(`(?m)^#.*\bcommit [0-9a-f]{40}\b`)

// TestGardenerProfilesAreAcceptedAndRoundTrip reads every profile of the
// corpus with its original apiVersion (core.gardener.cloud/v1beta1), as the
// CLI and the sync read it, validates the set (a namespaced profile's parent
// is in the corpus too), and checks that nothing of a spec was dropped or
// changed: the spec as written equals, as data, the spec of the object it was
// decoded into.
func TestGardenerProfilesAreAcceptedAndRoundTrip(t *testing.T) {
	g := NewWithT(t)
	files, err := filepath.Glob(filepath.Join(gardenerCorpus, "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())

	var docs []Document
	for _, file := range files {
		data, err := os.ReadFile(file)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(data)).To(HavePrefix("# Source: github.com/"), "%s names its source", file)
		g.Expect(sourceCommit.MatchString(string(data))).To(BeTrue(), "%s names the commit it was copied from", file)
		fileDocs, err := SplitDocuments(file, strings.NewReader(string(data)))
		g.Expect(err).NotTo(HaveOccurred())
		for _, doc := range fileDocs {
			var written map[string]any
			g.Expect(yaml.Unmarshal(doc.Data, &written)).To(Succeed())
			g.Expect(written["apiVersion"]).To(Equal(GardenerGroupVersion), "%s is a Gardener profile", file)
		}
		docs = append(docs, fileDocs...)
	}

	objects, problems := DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty())
	g.Expect(objects).To(HaveLen(len(docs)))
	report, err := Validate(objects, nil, time.Time{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Problems).To(BeEmpty())

	for i, o := range objects {
		var written map[string]any
		g.Expect(yaml.Unmarshal(docs[i].Data, &written)).To(Succeed())
		var typed any = o.CloudProfile
		if o.NamespacedCloudProfile != nil {
			typed = o.NamespacedCloudProfile
		}
		data, err := json.Marshal(typed)
		g.Expect(err).NotTo(HaveOccurred())
		var decoded map[string]any
		g.Expect(json.Unmarshal(data, &decoded)).To(Succeed())
		g.Expect(decoded["spec"]).To(Equal(withoutNulls(written["spec"])), "%s: %s round-trips", o.File, o.Ref())
	}
}

// withoutNulls returns a YAML value with the map entries whose value is null
// left out: null means the same as a field left out (Gardener writes
// versions: null), and a decoded object leaves such fields out.
func withoutNulls(value any) any {
	switch v := value.(type) {
	case map[string]any:
		kept := make(map[string]any, len(v))
		for key, item := range v {
			if item != nil {
				kept[key] = withoutNulls(item)
			}
		}
		return kept
	case []any:
		items := make([]any, len(v))
		for i, item := range v {
			items[i] = withoutNulls(item)
		}
		return items
	}
	return value
}
