package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profilesync/profilesync/test/builders"
)

// TestThePoliciesOfTheDocsDecode decodes every policy file docs/policy.md
// shows and the example repository's, so that what people copy works.
func TestThePoliciesOfTheDocsDecode(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	var policies []string
	for _, block := range builders.MarkdownYAMLBlocks(string(doc)) {
		if strings.Contains(block, "kind: "+Kind) {
			policies = append(policies, block)
		}
	}
	if len(policies) < 2 {
		t.Fatalf("found %d policies in docs/policy.md, want the schema's and the example policy's", len(policies))
	}
	for i, p := range policies {
		if _, err := Decode("docs/policy.md", []byte(p)); err != nil {
			t.Errorf("policy %d of docs/policy.md: %v", i+1, err)
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
}
