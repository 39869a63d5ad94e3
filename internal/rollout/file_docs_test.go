package rollout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profilesync/profilesync/test/builders"
)

// TestTheRolloutsOfTheDocsDecode decodes every rollout file docs/rollout.md
// shows and the example repository's, so that what people copy works, and
// checks that every problem the docs show is one the decoder reports.
func TestTheRolloutsOfTheDocsDecode(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "rollout.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rollouts, shownErrors []string
	for _, block := range builders.MarkdownYAMLBlocks(string(doc)) {
		if strings.Contains(block, "kind: "+Kind) {
			rollouts = append(rollouts, block)
		}
	}
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, FileName+": ") {
			shownErrors = append(shownErrors, line)
		}
	}
	if len(rollouts) == 0 {
		t.Fatal("found no rollout file in docs/rollout.md")
	}
	for i, r := range rollouts {
		if _, err := Decode("docs/rollout.md", []byte(r)); err != nil {
			t.Errorf("rollout %d of docs/rollout.md: %v", i+1, err)
		}
	}
	example := filepath.Join("..", "..", "examples", "profiles-repo", FileName)
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(example, data); err != nil {
		t.Error(err)
	}

	if len(shownErrors) == 0 {
		t.Fatal("found no error in docs/rollout.md")
	}
	var reported []string
	for _, body := range []string{
		"- {name: dev, path: a}\n- {name: staging, path: b, after: [dev]}\n- {name: prod, path: c, after: [stagin]}\n",
		"- {name: dev, path: a, after: [prod]}\n- {name: staging, path: b, after: [dev]}\n- {name: prod, path: c, after: [staging]}\n",
		"- {name: dev, path: overlays/dev}\n- {name: prod, path: ./overlays/dev/}\n",
		"- {name: dev, path: a}\n- {name: dev, path: b, soak: -1h}\n",
		"- {name: dev, path: a}\n- {name: prod, path: b, soak: 91d}\n",
		"- {name: dev, path: a, lag: {suported: {duration: 1d, severity: error}}}\n",
		"- {name: dev, path: a, lag: {supported: {duration: 1d, severity: fatal}}}\n",
		"- {name: dev, path: a, sook: 1h}\n",
	} {
		_, err := Decode(FileName, []byte("apiVersion: "+APIVersion+"\nkind: "+Kind+"\nlandscapes:\n"+body))
		if err != nil {
			reported = append(reported, strings.Split(err.Error(), "\n")...)
		}
	}
	for _, line := range shownErrors {
		found := false
		for _, r := range reported {
			found = found || r == line
		}
		if !found {
			t.Errorf("docs/rollout.md shows an error the decoder does not report: %s", line)
		}
	}
}
