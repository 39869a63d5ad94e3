package propose

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/repofile"
)

const versionsHeader = "apiVersion: versions.profilesync.io/v1alpha1\nkind: VersionSources\n"

const gitSource = `- name: kubernetes
  git: {url: https://example.com/kubernetes.git}
  feeds: [{file: base/cloudprofiles.yaml, cloudProfile: aws}]
`

func TestDecodeReadsEveryFieldOfTheVersionsFile(t *testing.T) {
	g := NewWithT(t)
	f, err := Decode(FileName, []byte(versionsHeader+`schedule:
  previewDuration: 21d
  expiryAfterDeprecation: 60d
  retirementAge: 1d12h
sources:
- name: kubernetes
  git:
    url: https://example.com/kubernetes.git
  tagPattern: '^release-(\d+\.\d+\.\d+)$'
  versions: ">= 1.32, < 2"
  cooldown: 3d
  feeds:
  - file: base/cloudprofiles.yaml
    cloudProfile: aws
  - file: ./base/../base/gcp.yaml
    cloudProfile: gcp
- name: gardenlinux
  oci:
    repository: ghcr.io/gardenlinux/gardenlinux
    credentials:
      secretName: ghcr-pull
      usernameEnv: GHCR_USER
      passwordEnv: GHCR_TOKEN
  feeds:
  - file: base/cloudprofiles.yaml
    cloudProfile: aws
    machineImage: gardenlinux
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Schedule).To(Equal(Schedule{PreviewDuration: 21 * day, ExpiryAfterDeprecation: 60 * day, RetirementAge: 36 * time.Hour}))
	g.Expect(f.Sources).To(HaveLen(2))
	k := f.Sources[0]
	g.Expect(k.Name).To(Equal("kubernetes"))
	g.Expect(k.Git).To(Equal(&GitSource{URL: "https://example.com/kubernetes.git"}))
	g.Expect(k.OCI).To(BeNil())
	g.Expect(k.Cooldown).To(Equal(3 * day))
	g.Expect(k.Feeds).To(Equal([]Feed{{File: "base/cloudprofiles.yaml", CloudProfile: "aws"}, {File: "base/gcp.yaml", CloudProfile: "gcp"}}))
	for tag, want := range map[string]string{"release-1.34.3": "1.34.3", "release-1.31.9": "", "v1.34.3": "", "release-2.0.0": ""} {
		v, ok := k.Version(tag)
		if want == "" {
			g.Expect(ok).To(BeFalse(), tag)
			continue
		}
		g.Expect(ok).To(BeTrue(), tag)
		g.Expect(v.String()).To(Equal(want))
	}
	o := f.Sources[1]
	g.Expect(o.OCI).To(Equal(&OCISource{Repository: "ghcr.io/gardenlinux/gardenlinux", Credentials: &Credentials{SecretName: "ghcr-pull", UsernameEnv: "GHCR_USER", PasswordEnv: "GHCR_TOKEN"}}))
	g.Expect(o.Feeds).To(Equal([]Feed{{File: "base/cloudprofiles.yaml", CloudProfile: "aws", MachineImage: "gardenlinux"}}))
	g.Expect(o.Cooldown).To(BeZero())
}

func TestDecodeFillsTheDefaults(t *testing.T) {
	g := NewWithT(t)
	f, err := Decode(FileName, []byte(versionsHeader+"sources:\n"+gitSource+`- name: flatcar
  oci: {repository: "localhost:5000/flatcar"}
  feeds: [{file: base/cloudprofiles.yaml, cloudProfile: aws, machineImage: flatcar}]
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Schedule).To(Equal(Schedule{PreviewDuration: 14 * day, ExpiryAfterDeprecation: 120 * day, RetirementAge: 90 * day}))
	git, oci := f.Sources[0], f.Sources[1]
	g.Expect(git.TagPattern.String()).To(Equal(DefaultGitTagPattern))
	g.Expect(oci.TagPattern.String()).To(Equal(DefaultOCITagPattern))
	for source, tags := range map[*Source]map[string]bool{
		&git: {"v1.34.3": true, "1.34.3": false, "v1.34.3-rc.1": false, "v1.34": false},
		&oci: {"1877.3": true, "1877.3.0": true, "v1592": true, "latest": false, "1877.3-dev": false},
	} {
		for tag, want := range tags {
			_, ok := source.Version(tag)
			g.Expect(ok).To(Equal(want), "%s: %s", source.Name, tag)
		}
	}
}

func TestDecodeVersionsFileNamesFileAndFieldOfEveryProblem(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"an unknown field", versionsHeader + "schedule: {previewDurations: 3d}\nsources:\n" + gitSource, []string{
			"v.yaml: schedule.previewDurations: unknown field: the versions has no such field (check spelling and indentation; docs/versions.md lists the fields)",
		}},
		{"a value of the wrong type", versionsHeader + "sources: {name: x}\n", []string{
			"v.yaml: sources: Invalid value: must be of type list, not mapping",
		}},
		{"another schema", "apiVersion: v1\nkind: ConfigMap\nsources:\n" + gitSource, []string{
			`v.yaml: apiVersion: must be versions.profilesync.io/v1alpha1, not "v1"`,
			`v.yaml: kind: must be VersionSources, not "ConfigMap"`,
		}},
		{"no source", versionsHeader + "sources: []\n", []string{
			"v.yaml: sources: required: the file lists at least one source",
		}},
		{"durations that are no durations or out of range", versionsHeader + "schedule: {previewDuration: two weeks, expiryAfterDeprecation: 1h, retirementAge: 5000d}\nsources:\n" + gitSource, []string{
			`v.yaml: schedule.previewDuration: "two weeks" is not a duration like 12h or 30d`,
			"v.yaml: schedule.expiryAfterDeprecation: 1h is shorter than 1d",
			"v.yaml: schedule.retirementAge: 5000d is longer than 1095d, the longest this file takes",
		}},
		{"a source of neither kind and one of both", versionsHeader + `sources:
- name: nothing
  feeds: [{file: a.yaml, cloudProfile: aws}]
- name: both
  git: {url: https://x}
  oci: {repository: ghcr.io/x}
  feeds: [{file: a.yaml, cloudProfile: gcp}]
`, []string{
			"v.yaml: sources[0]: required: git (Kubernetes versions from a Git repository's tags) or oci (machine image versions from an OCI repository's tags)",
			"v.yaml: sources[1]: set git or oci, not both: a source lists the tags of one repository",
		}},
		{"names that are missing, invalid or repeated", versionsHeader + `sources:
- git: {url: https://x}
  feeds: [{file: a.yaml, cloudProfile: a}]
- name: Kubernetes_1
  git: {url: https://x}
  feeds: [{file: a.yaml, cloudProfile: b}]
- name: k
  git: {url: https://x}
  feeds: [{file: a.yaml, cloudProfile: c}]
- name: k
  git: {url: https://x}
  feeds: [{file: a.yaml, cloudProfile: d}]
`, []string{
			"v.yaml: sources[0].name: required: every source has a name, which its failures are reported by",
			`v.yaml: sources[1].name: "Kubernetes_1" is not a valid name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			`v.yaml: sources[3].name: duplicate name "k": sources[2] has it too`,
		}},
		{"a Git source without URL, a bad pattern and a bad range", versionsHeader + `sources:
- name: k
  git: {url: ""}
  tagPattern: "v("
  versions: "newest"
  cooldown: -1h
  feeds: [{file: a.yaml, cloudProfile: a}]
- name: l
  git: {url: https://x}
  tagPattern: "^v.*$"
  feeds: [{file: a.yaml, cloudProfile: b, machineImage: ubuntu}]
`, []string{
			"v.yaml: sources[0].git.url: required: the Git repository whose tags are Kubernetes versions",
			"v.yaml: sources[0].tagPattern: not a regular expression: error parsing regexp: missing closing ): `v(`",
			"v.yaml: sources[0].versions: \"newest\" is not a semver range like \">= 1.32\": improper constraint: \"newest\"",
			"v.yaml: sources[0].cooldown: -1h is shorter than 0d",
			`v.yaml: sources[1].tagPattern: "^v.*$" has no group: its first group, in parentheses, is the version`,
			"v.yaml: sources[1].feeds[0].machineImage: a Git source feeds Kubernetes versions: leave machineImage out, or use an oci source",
		}},
		{"an OCI source with a tag, half its credentials, and no image to feed", versionsHeader + `sources:
- name: img
  oci:
    repository: ghcr.io/gardenlinux/gardenlinux:1877.3
    credentials: {usernameEnv: USER, secretName: Not_A_Secret}
  feeds: [{file: a.yaml, cloudProfile: a}]
- name: img2
  oci:
    repository: ""
    credentials: {usernameEnv: "1X", passwordEnv: P}
  feeds: [{file: a.yaml, cloudProfile: a, machineImage: x}]
`, []string{
			`v.yaml: sources[0].oci.repository: "ghcr.io/gardenlinux/gardenlinux:1877.3" is not a repository: write it without tag or digest`,
			`v.yaml: sources[0].oci.credentials.secretName: "Not_A_Secret" is not a Secret's name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			"v.yaml: sources[0].oci.credentials: set usernameEnv and passwordEnv together",
			"v.yaml: sources[0].feeds[0].machineImage: required: the machine image of the CloudProfile the OCI source's versions go into",
			"v.yaml: sources[1].oci.repository: required: the OCI repository whose tags are machine image versions, like ghcr.io/gardenlinux/gardenlinux",
			`v.yaml: sources[1].oci.credentials.usernameEnv: "1X" is not an environment variable's name`,
		}},
		{"Git sources of another scheme, or with credentials that do not fit their scheme", versionsHeader + `sources:
- name: file
  git: {url: "file:///srv/kubernetes.git"}
  feeds: [{file: a.yaml, cloudProfile: a}]
- name: ssh
  git:
    url: git@github.com:kubernetes/kubernetes.git
    credentials: {usernameEnv: GIT_USER, identityEnv: GIT_KEY, passwordEnv: "2X"}
  feeds: [{file: a.yaml, cloudProfile: b}]
- name: ssh-passphrase
  git:
    url: ssh://git@github.com/kubernetes/kubernetes.git
    credentials: {passwordEnv: GIT_PASSPHRASE}
  feeds: [{file: a.yaml, cloudProfile: c}]
- name: https
  git:
    url: https://github.com/kubernetes/kubernetes.git
    credentials: {knownHostsEnv: KNOWN_HOSTS, passwordEnv: GIT_TOKEN}
  feeds: [{file: a.yaml, cloudProfile: d}]
- name: empty
  git: {url: https://x, credentials: {}}
  feeds: [{file: a.yaml, cloudProfile: e}]
- name: oci
  oci: {repository: ghcr.io/x/y, credentials: {secretName: s, identityEnv: KEY}}
  feeds: [{file: a.yaml, cloudProfile: f, machineImage: x}]
`, []string{
			"v.yaml: sources[0].git.url: a file URL: sources are read over https, http or ssh (ssh://host/path or user@host:path)",
			"v.yaml: sources[1].git.credentials.usernameEnv: an ssh source's user is the URL's (git@host:path); leave usernameEnv out",
			"v.yaml: sources[1].git.credentials: set identityEnv and knownHostsEnv together: the server's host key is always checked",
			`v.yaml: sources[1].git.credentials.passwordEnv: "2X" is not an environment variable's name`,
			"v.yaml: sources[2].git.credentials.passwordEnv: over ssh, passwordEnv is the passphrase of identityEnv's key: set identityEnv too",
			"v.yaml: sources[3].git.credentials: identityEnv and knownHostsEnv are for ssh; an https source takes usernameEnv and passwordEnv",
			"v.yaml: sources[3].git.credentials: set usernameEnv with passwordEnv",
			"v.yaml: sources[4].git.credentials: required: secretName (for the operator), the variables the CLI reads, or both",
			"v.yaml: sources[5].oci.credentials: identityEnv and knownHostsEnv are for a Git source over ssh; a registry takes usernameEnv and passwordEnv",
		}},
		{"feeds that leave the repository, are no YAML, or are fed twice", versionsHeader + `sources:
- name: k
  git: {url: https://x}
  feeds:
  - {file: ../other/a.yaml, cloudProfile: a}
  - {file: /etc/a.yaml, cloudProfile: b}
  - {file: .git/config.yaml, cloudProfile: c}
  - {file: base/README.md, cloudProfile: d}
  - {file: base/a.yaml}
  - {file: base/a.yaml, cloudProfile: e}
- name: l
  git: {url: https://y}
  feeds: [{file: base/b.yaml, cloudProfile: e}]
`, []string{
			`v.yaml: sources[0].feeds[0].file: "../other/a.yaml" is not a file inside the repository`,
			`v.yaml: sources[0].feeds[1].file: "/etc/a.yaml" must be relative to the repository root, with forward slashes`,
			`v.yaml: sources[0].feeds[2].file: ".git/config.yaml" is in .git/, Git's metadata`,
			`v.yaml: sources[0].feeds[3].file: "base/README.md" is not a YAML file (.yaml or .yml)`,
			"v.yaml: sources[0].feeds[4].cloudProfile: required: the name of the CloudProfile the versions go into",
			"v.yaml: sources[1].feeds[0]: the Kubernetes versions of CloudProfile e is fed by source k too: one list of versions has one source",
		}},
		{"a second YAML document", versionsHeader + "sources:\n" + gitSource + "---\n" + versionsHeader, []string{
			"v.yaml: a second YAML document at line 8: a versions file is one document, and the rest would be ignored; remove the --- before it and merge it into the first, or delete it",
		}},
		{"a value YAML 1.1 and 1.2 read differently", versionsHeader + "sources:\n- name: no\n  git: {url: https://x}\n  feeds: [{file: a.yaml, cloudProfile: a}]\n", []string{
			`v.yaml: sources[0].name: Invalid value: no as written: YAML 1.1, which reads this file, takes it as a boolean, YAML 1.2 as the string "no"; quote it ("no") or write true or false`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Decode("v.yaml", []byte(tt.data))
			g.Expect(err).To(HaveOccurred())
			var decodeErr *DecodeError
			g.Expect(errors.As(err, &decodeErr)).To(BeTrue())
			g.Expect(strings.Split(err.Error(), "\n")).To(Equal(tt.want))
		})
	}
}

func TestReadFindsTheVersionsFileAtTheRootThroughTheConfinedReader(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	reader, err := repofile.Open(root, repofile.Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	f, err := Read(reader)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f).To(BeNil(), "a repository without the file has no sources")

	outside := filepath.Join(t.TempDir(), FileName)
	g.Expect(os.WriteFile(outside, []byte(versionsHeader+"sources:\n"+gitSource), 0o600)).To(Succeed())
	g.Expect(os.Symlink(outside, filepath.Join(root, FileName))).To(Succeed())
	_, err = Read(reader)
	g.Expect(err).To(MatchError(ContainSubstring("a symbolic link that leads outside the repository root")))
	g.Expect(errors.Is(err, repofile.ErrRefused)).To(BeTrue())

	g.Expect(os.Remove(filepath.Join(root, FileName))).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(root, FileName), []byte(versionsHeader+"sources:\n"+gitSource), 0o600)).To(Succeed())
	f, err = Read(reader)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Sources[0].Name).To(Equal("kubernetes"))
}

func TestDecodeReadsGitSourcesOverSSHAndTheirCredentials(t *testing.T) {
	g := NewWithT(t)
	f, err := Decode(FileName, []byte(versionsHeader+`sources:
- name: scp-like
  git:
    url: git@github.com:kubernetes/kubernetes.git
    credentials: {secretName: github-deploy-key, identityEnv: GIT_SSH_KEY, knownHostsEnv: GIT_KNOWN_HOSTS, passwordEnv: GIT_SSH_PASSPHRASE}
  feeds: [{file: a.yaml, cloudProfile: a}]
- name: ssh-url
  git:
    url: ssh://git@git.example.com:2222/kubernetes.git
    credentials: {secretName: deploy-key}
  feeds: [{file: a.yaml, cloudProfile: b}]
- name: https
  git:
    url: https://git.example.com/kubernetes.git
    credentials: {usernameEnv: GIT_USER, passwordEnv: GIT_TOKEN}
  feeds: [{file: a.yaml, cloudProfile: c}]
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Sources[0].Git).To(Equal(&GitSource{URL: "git@github.com:kubernetes/kubernetes.git", Credentials: &Credentials{
		SecretName: "github-deploy-key", IdentityEnv: "GIT_SSH_KEY", KnownHostsEnv: "GIT_KNOWN_HOSTS", PasswordEnv: "GIT_SSH_PASSPHRASE"}}))
	g.Expect(f.Sources[1].Git).To(Equal(&GitSource{URL: "ssh://git@git.example.com:2222/kubernetes.git", Credentials: &Credentials{SecretName: "deploy-key"}}))
	g.Expect(f.Sources[2].Git).To(Equal(&GitSource{URL: "https://git.example.com/kubernetes.git", Credentials: &Credentials{UsernameEnv: "GIT_USER", PasswordEnv: "GIT_TOKEN"}}))
	for i, want := range []string{"ssh", "ssh", "https"} {
		scheme, err := GitURLScheme(f.Sources[i].Git.URL)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(scheme).To(Equal(want))
	}
}
