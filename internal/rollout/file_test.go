package rollout

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/repofile"
)

const header = "apiVersion: rollout.profilesync.io/v1alpha1\nkind: Rollout\n"

const threeLandscapes = header + `landscapes:
- name: dev
  path: overlays/dev
- name: staging
  path: ./overlays/staging/
  after: [dev]
  soak: 1d
- name: prod
  path: overlays/prod
  after: [staging]
  soak: 2d12h
  lag:
    supported: {duration: 7d, severity: error}
    expired: {duration: 0s, severity: warning}
`

func TestDecodeReadsEveryField(t *testing.T) {
	g := NewWithT(t)
	f, err := Decode(FileName, []byte(threeLandscapes))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Landscapes).To(Equal([]Landscape{
		{Name: "dev", Path: "overlays/dev"},
		{Name: "staging", Path: "overlays/staging", After: []string{"dev"}, Soak: 24 * time.Hour},
		{Name: "prod", Path: "overlays/prod", After: []string{"staging"}, Soak: 60 * time.Hour, Lag: map[v1alpha1.VersionClassification]Lag{
			v1alpha1.ClassificationSupported: {Duration: 7 * 24 * time.Hour, Severity: repofile.SeverityError},
			v1alpha1.ClassificationExpired:   {Duration: 0, Severity: repofile.SeverityWarning},
		}},
	}))
}

func TestDecodeNamesFileAndFieldOfEveryProblem(t *testing.T) {
	landscapes := func(body string) string { return header + "landscapes:\n" + body }
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"an unknown landscape in after", landscapes("- {name: dev, path: a}\n- {name: staging, path: b, after: [dev]}\n- {name: prod, path: c, after: [stagin]}\n"), []string{
			`profilesync-rollout.yaml: landscapes[2].after[0]: unknown landscape "stagin" (the landscapes are dev, staging, prod)`,
		}},
		{"a cycle", landscapes("- {name: dev, path: a, after: [prod]}\n- {name: staging, path: b, after: [dev]}\n- {name: prod, path: c, after: [staging]}\n"), []string{
			"profilesync-rollout.yaml: landscapes[0].after: a cycle: dev → prod → staging → dev each wait for the next, so none can take a commit",
		}},
		{"a landscape after itself", landscapes("- {name: dev, path: a, after: [dev]}\n"), []string{
			"profilesync-rollout.yaml: landscapes[0].after: a cycle: dev → dev each wait for the next, so none can take a commit",
		}},
		{"two landscapes with one path", landscapes("- {name: dev, path: overlays/dev}\n- {name: prod, path: ./overlays/dev/}\n"), []string{
			`profilesync-rollout.yaml: landscapes[1].path: "./overlays/dev/" is the path of landscapes[0] (dev) too: a landscape has an overlay of its own`,
		}},
		{"duplicate names", landscapes("- {name: dev, path: a}\n- {name: dev, path: b}\n"), []string{
			`profilesync-rollout.yaml: landscapes[1].name: duplicate name "dev": landscapes[0] has it too`,
		}},
		{"a negative soak", landscapes("- {name: dev, path: a}\n- {name: prod, path: b, after: [dev], soak: -1h}\n"), []string{
			"profilesync-rollout.yaml: landscapes[1].soak: -1h is negative",
		}},
		{"an absurd soak", landscapes("- {name: dev, path: a}\n- {name: prod, path: b, after: [dev], soak: 91d}\n"), []string{
			"profilesync-rollout.yaml: landscapes[1].soak: 91d is longer than the most a rollout waits, 2160h0m0s (90d)",
		}},
		{"a soak without a unit", landscapes("- {name: dev, path: a, soak: '10'}\n"), []string{
			`profilesync-rollout.yaml: landscapes[0].soak: "10" is not a duration like 1h, 30m or 2d`,
		}},
		{"a lag on a classification that does not exist", landscapes("- {name: dev, path: a, lag: {suported: {duration: 1d, severity: error}}}\n"), []string{
			"profilesync-rollout.yaml: landscapes[0].lag[suported]: no such classification: a lag is set for preview, supported, deprecated, expired",
		}},
		{"a bad severity", landscapes("- {name: dev, path: a, lag: {supported: {duration: 1d, severity: fatal}}}\n"), []string{
			`profilesync-rollout.yaml: landscapes[0].lag[supported].severity: "fatal" is not a severity: warning or error`,
		}},
		{"a lag without severity or duration", landscapes("- {name: dev, path: a, lag: {preview: {}}}\n"), []string{
			"profilesync-rollout.yaml: landscapes[0].lag[preview].duration: required: how long after the upstream's stage this one may start, like 7d",
			"profilesync-rollout.yaml: landscapes[0].lag[preview].severity: required: warning or error",
		}},
		{"an absurd lag", landscapes("- {name: dev, path: a, lag: {expired: {duration: 400d, severity: error}}}\n"), []string{
			"profilesync-rollout.yaml: landscapes[0].lag[expired].duration: 400d is longer than the longest lag, 8760h0m0s (365d)",
		}},
		{"a path that leaves the repository", landscapes("- {name: dev, path: ../other}\n- {name: prod, path: /overlays/prod}\n"), []string{
			`profilesync-rollout.yaml: landscapes[0].path: "../other" leaves the repository`,
			`profilesync-rollout.yaml: landscapes[1].path: "/overlays/prod" must be relative to the repository root, with forward slashes`,
		}},
		{"a name that is no DNS label", landscapes("- {name: Dev_1, path: a}\n- {path: b}\n"), []string{
			`profilesync-rollout.yaml: landscapes[0].name: "Dev_1" is not a valid name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			"profilesync-rollout.yaml: landscapes[1].name: required: every landscape has a name",
		}},
		{"an upstream listed twice", landscapes("- {name: dev, path: a}\n- {name: prod, path: b, after: [dev, dev]}\n"), []string{
			`profilesync-rollout.yaml: landscapes[1].after[1]: "dev" is listed twice`,
		}},
		{"an unknown field", landscapes("- {name: dev, path: a, sook: 1h}\n"), []string{
			"profilesync-rollout.yaml: landscapes[0].sook: unknown field: the rollout has no such field (check spelling and indentation; docs/rollout.md lists the fields)",
		}},
		{"a value of the wrong type", landscapes("- {name: dev, path: a, after: dev}\n"), []string{
			"profilesync-rollout.yaml: landscapes[0].after: Invalid value: must be of type list, not string",
		}},
		{"a second YAML document, which the decoder would drop", landscapes("- {name: dev, path: a}\n---\n" + header + "landscapes:\n- {name: prod, path: b}\n"), []string{
			"profilesync-rollout.yaml: a second YAML document at line 6: a rollout file is one document, and the rest would be ignored; remove the --- before it and merge it into the first, or delete it",
		}},
		{"a value of the wrong type in the second landscape keeps its index", landscapes("- {name: dev, path: a}\n- {name: prod, path: b, soak: [1d]}\n"), []string{
			"profilesync-rollout.yaml: landscapes[1].soak: Invalid value: must be of type string, not list",
		}},
		{"a number where a string is asked keeps its index and says to quote it", landscapes("- {name: dev, path: a}\n- {name: prod, path: b, soak: 10}\n"), []string{
			`profilesync-rollout.yaml: landscapes[1].soak: Invalid value: 10 as written: YAML reads it as a number, and this field is a string; quote it: "10"`,
		}},
		{"a name YAML 1.1 reads as a boolean is to be quoted", landscapes("- {name: no, path: a}\n"), []string{
			`profilesync-rollout.yaml: landscapes[0].name: Invalid value: no as written: YAML 1.1, which reads this file, takes it as a boolean, YAML 1.2 as the string "no"; quote it ("no") or write true or false`,
		}},
		{"a path in .git/", landscapes("- {name: dev, path: .git/overlays/dev}\n- {name: prod, path: vendor/.git/hooks}\n"), []string{
			`profilesync-rollout.yaml: landscapes[0].path: ".git/overlays/dev" is in .git/, Git's metadata, which holds no overlay`,
			`profilesync-rollout.yaml: landscapes[1].path: "vendor/.git/hooks" is in .git/, Git's metadata, which holds no overlay`,
		}},
		{"a wrong header and no landscapes", "apiVersion: v1\nkind: Rollout\n", []string{
			`profilesync-rollout.yaml: apiVersion: must be rollout.profilesync.io/v1alpha1, not "v1"`,
			"profilesync-rollout.yaml: landscapes: a rollout lists at least one landscape",
		}},
		{"not a mapping", "- dev\n", []string{
			"profilesync-rollout.yaml: not a rollout: expected a mapping with apiVersion, kind and landscapes",
		}},
		{"not YAML", "landscapes: [\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Decode(FileName, []byte(tt.data))
			var decodeErr *DecodeError
			g.Expect(errors.As(err, &decodeErr)).To(BeTrue(), "error %v", err)
			if tt.want == nil {
				g.Expect(err.Error()).To(HavePrefix("profilesync-rollout.yaml: not valid YAML: "))
				return
			}
			g.Expect(strings.Split(err.Error(), "\n")).To(Equal(tt.want))
		})
	}
}

func TestDecodeReadsAQuotedNameAsWritten(t *testing.T) {
	g := NewWithT(t)
	f, err := Decode(FileName, []byte(header+"landscapes:\n- {name: 'no', path: a}\n- {name: \"on\", path: b, after: ['no']}\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Landscapes[0].Name).To(Equal("no"))
	g.Expect(f.Landscapes[1].After).To(Equal([]string{"no"}))
}

func TestDecodeRefusesMoreLandscapesThanTheBound(t *testing.T) {
	g := NewWithT(t)
	var b strings.Builder
	b.WriteString(header + "landscapes:\n")
	for i := range MaxLandscapes + 1 {
		b.WriteString("- {name: l" + strings.Repeat("x", i%3) + ", path: p}\n")
	}
	_, err := Decode(FileName, []byte(b.String()))
	g.Expect(err).To(MatchError("profilesync-rollout.yaml: landscapes: 101 landscapes are more than the 100 a rollout may list"))
}

func TestLandscapeFor(t *testing.T) {
	f, err := Decode(FileName, []byte(threeLandscapes+"- {name: root, path: .}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name               string
		path, explicitName string
		want               string // "" for no landscape
		wantErr            string
	}{
		{"the landscape whose path is spec.path", "overlays/prod", "", "prod", ""},
		{"a path written otherwise", "./overlays/staging/", "", "staging", ""},
		{"the repository root, spec.path's default", "./", "", "root", ""},
		{"a path of no landscape", "overlays/other", "", "", ""},
		{"a path below a landscape's is not in it", "overlays/prod/eu", "", "", ""},
		{"a path that leaves the repository", "../overlays/prod", "", "", ""},
		{"spec.landscape says otherwise", "overlays/other", "prod", "prod", ""},
		{"spec.landscape over a path of another landscape", "overlays/dev", "staging", "staging", ""},
		{"spec.landscape that the file does not list", "overlays/dev", "stagin", "", `unknown landscape "stagin": profilesync-rollout.yaml lists dev, staging, prod, root`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			l, err := f.LandscapeFor(tt.path, tt.explicitName)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(tt.wantErr))
				g.Expect(errors.Is(err, ErrUnknownLandscape)).To(BeTrue())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == "" {
				g.Expect(l).To(BeNil())
				return
			}
			g.Expect(l).NotTo(BeNil())
			g.Expect(l.Name).To(Equal(tt.want))
		})
	}
}

func TestLandscapeForWithoutARolloutFile(t *testing.T) {
	g := NewWithT(t)
	var f *File
	l, err := f.LandscapeFor("overlays/dev", "")
	g.Expect(l).To(BeNil())
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.LandscapeFor("overlays/dev", "dev")
	g.Expect(err).To(MatchError(`unknown landscape "dev": the repository has no profilesync-rollout.yaml`))
}

func TestReadAtFindsTheFileAtTheRootOnly(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	f, err := ReadAt(root, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f).To(BeNil(), "no rollout file is no rollout")

	g.Expect(os.WriteFile(filepath.Join(root, FileName), []byte(threeLandscapes), 0o600)).To(Succeed())
	f, err = ReadAt(root, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Landscapes).To(HaveLen(3))

	_, err = ReadAt(root, 64)
	g.Expect(errors.Is(err, repofile.ErrLimitExceeded)).To(BeTrue(), "the file is read within the limits: %v", err)
}

func TestReadAtRefusesALinkOutOfTheRepository(t *testing.T) {
	g := NewWithT(t)
	outside, root := t.TempDir(), t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(outside, FileName), []byte(threeLandscapes), 0o600)).To(Succeed())
	g.Expect(os.Symlink(filepath.Join(outside, FileName), filepath.Join(root, FileName))).To(Succeed())
	_, err := ReadAt(root, 0)
	g.Expect(errors.Is(err, repofile.ErrRefused)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(FileName))
}

func TestParseDuration(t *testing.T) {
	g := NewWithT(t)
	for value, want := range map[string]time.Duration{"30m": 30 * time.Minute, "2d": 48 * time.Hour, "1d12h": 36 * time.Hour, "0s": 0} {
		d, err := ParseDuration(value)
		g.Expect(err).NotTo(HaveOccurred(), value)
		g.Expect(d).To(Equal(want), value)
	}
	for _, value := range []string{"", "10", "d", "1d-1h", "99999999999d", "1w"} {
		_, err := ParseDuration(value)
		g.Expect(err).To(HaveOccurred(), value)
	}
}
