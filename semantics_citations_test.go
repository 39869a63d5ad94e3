package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citation is how the code and the docs cite a rule of docs/semantics.md:
// a section (§3) or a numbered rule of a section (§1.5).
var citation = regexp.MustCompile(`semantics\.md\)? §(\d+)(?:\.(\d+))?`)

// TestEveryCitationOfTheSemanticsNamesARuleThatExists reads every Go file
// and document of the repository and checks that each citation of
// docs/semantics.md points to a section, and a numbered rule, that the page
// has.
func TestEveryCitationOfTheSemanticsNamesARuleThatExists(t *testing.T) {
	semantics, err := os.ReadFile(filepath.Join("docs", "semantics.md"))
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]bool{} // "3" for a section, "1.5" for its fifth rule
	section := ""
	for _, line := range strings.Split(string(semantics), "\n") {
		if m := regexp.MustCompile(`^## (\d+)\. `).FindStringSubmatch(line); m != nil {
			section = m[1]
			rules[section] = true
		} else if m := regexp.MustCompile(`^(\d+)\. `).FindStringSubmatch(line); m != nil && section != "" {
			rules[section+"."+m[1]] = true
		}
	}
	if !rules["1"] || !rules["1.5"] || !rules["4"] {
		t.Fatalf("docs/semantics.md has lost its numbering: %v", rules)
	}
	cited := 0
	walkRepositoryFiles(t, func(path, content string) {
		for _, m := range citation.FindAllStringSubmatch(content, -1) {
			cited++
			rule := m[1]
			if m[2] != "" {
				rule += "." + m[2]
			}
			if !rules[rule] {
				t.Errorf("%s cites docs/semantics.md §%s, which it does not have", path, rule)
			}
		}
	})
	if cited < 20 {
		t.Errorf("found %d citations; the walk missed the code", cited)
	}
}
