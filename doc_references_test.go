package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideDocuments are documents that were written beside the repository,
// never in it: citing one sends a reader to a file they do not have.
var outsideDocuments = []string{
	"DESIGN.md", "SEMANTICS.md", "TOOLCHAIN.md", "STYLE.md", "versioning-policy.md", "../shared",
}

// markdownLink is a link of a document: its target file (empty for a
// section of the same page) and the section it points to, if any.
var markdownLink = regexp.MustCompile(`\]\(([^)\s#]*)(?:#([^)\s]*))?\)`)

// walkRepositoryFiles calls visit with every Go, Markdown and YAML file of
// the repository and its content, skipping .git and the shared tools in bin.
func walkRepositoryFiles(t *testing.T, visit func(path, content string)) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() && (entry.Name() == ".git" || entry.Name() == "bin") {
			return filepath.SkipDir
		}
		if entry.IsDir() {
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" && ext != ".yaml" {
			return nil
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		visit(path, string(content))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNothingCitesADocumentOutsideTheRepository(t *testing.T) {
	walkRepositoryFiles(t, func(path, content string) {
		if path == "doc_references_test.go" {
			return
		}
		for _, outside := range outsideDocuments {
			if strings.Contains(content, outside) {
				t.Errorf("%s cites %s, which is not in this repository: say it here, or cite docs/semantics.md or docs/lifecycle.md", path, outside)
			}
		}
	})
}

// TestEveryLinkOfTheDocsReachesAFileAndSectionThatExist catches a link
// left behind when a page is merged into another or a heading renamed.
func TestEveryLinkOfTheDocsReachesAFileAndSectionThatExist(t *testing.T) {
	links := 0
	walkRepositoryFiles(t, func(path, content string) {
		if filepath.Ext(path) != ".md" {
			return
		}
		for _, m := range markdownLink.FindAllStringSubmatch(content, -1) {
			target, section := m[1], m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file := path
			if target != "" {
				file = filepath.Join(filepath.Dir(path), target)
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s links %s, which does not exist", path, m[0])
				continue
			}
			if section == "" || filepath.Ext(file) != ".md" {
				continue
			}
			if linked, err := os.ReadFile(file); err != nil || !hasSection(string(linked), section) {
				t.Errorf("%s links %s: %s has no section %q", path, m[0], file, section)
			}
		}
	})
	if links < 50 {
		t.Errorf("found %d links; the walk missed the docs", links)
	}
}

// hasSection reports whether a page has a heading whose anchor, as GitHub
// writes it, is section.
func hasSection(page, section string) bool {
	for _, line := range strings.Split(page, "\n") {
		heading := strings.TrimLeft(line, "#")
		if heading == line || !strings.HasPrefix(heading, " ") {
			continue
		}
		if headingAnchor(heading) == section {
			return true
		}
	}
	return false
}

// headingAnchor is GitHub's anchor of a heading: lower case, spaces as
// hyphens, punctuation other than hyphens and underscores dropped.
func headingAnchor(heading string) string {
	var anchor strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			anchor.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			anchor.WriteRune(r)
		}
	}
	return anchor.String()
}

// repositoryDocs is where links from outside the repository's own pages
// (the alerts' runbook_url) reach its files: the repository on GitHub, at
// main.
const repositoryDocs = "https://github.com/profilesync/profilesync/blob/main/"

// runbookURL is the runbook_url annotation of an alert, on its own line.
var runbookURL = regexp.MustCompile(`(?m)^\s*runbook_url:\s*['"]?([^'"\s]+)['"]?\s*$`)

// TestEveryRunbookURLReachesASectionOfTheRunbooks: the runbook_url of every
// alert the repository ships is a link into its own docs, to a file and a
// section that exist, so an alert never sends the on-call engineer to a
// missing page or the top of a long one.
func TestEveryRunbookURLReachesASectionOfTheRunbooks(t *testing.T) {
	links := 0
	walkRepositoryFiles(t, func(path, content string) {
		if filepath.Ext(path) != ".yaml" {
			return
		}
		for _, m := range runbookURL.FindAllStringSubmatch(content, -1) {
			url := m[1]
			if strings.Contains(url, "{{") {
				// A template (a chart's) is checked where it renders.
				continue
			}
			links++
			target, found := strings.CutPrefix(url, repositoryDocs)
			file, section, anchored := strings.Cut(target, "#")
			if !found || !strings.HasPrefix(file, "docs/") || !anchored || section == "" {
				t.Errorf("%s: runbook_url %s is not a section of a page under %sdocs/", path, url, repositoryDocs)
				continue
			}
			page, err := os.ReadFile(filepath.FromSlash(file))
			if err != nil {
				t.Errorf("%s: runbook_url %s: %s does not exist", path, url, file)
				continue
			}
			if !hasSection(string(page), section) {
				t.Errorf("%s: runbook_url %s: %s has no section %q", path, url, file, section)
			}
		}
	})
	if links < 8 {
		t.Errorf("found %d runbook links; config/prometheus/prometheusrule.yaml alone has 8", links)
	}
}
