package propose

import (
	"errors"
	"strings"
	"testing"
)

// FuzzDecodeVersionsFile: whatever the file holds, Decode either refuses it
// with a *DecodeError whose every line names the file, or returns a file
// the engine and the sources can follow: every source of exactly one kind,
// with a tag pattern that has a group and at least one feed, and a schedule
// within its bounds.
func FuzzDecodeVersionsFile(f *testing.F) {
	f.Add([]byte(versionsHeader + "sources:\n" + gitSource))
	f.Add([]byte(versionsHeader + "schedule: {previewDuration: 3d, retirementAge: 0s}\nsources:\n- name: img\n  oci: {repository: ghcr.io/x/y, credentials: {secretName: s}}\n  tagPattern: '^(\\d+)$'\n  feeds: [{file: a.yaml, cloudProfile: a, machineImage: x}]\n"))
	f.Add([]byte("sources: [{name: a, git: {url: x}, feeds: [{file: ../a.yaml}]}]\n---\n"))
	f.Add([]byte(versionsHeader + "sources:\n- name: k\n  git: {url: \"git@github.com:k/k.git\", credentials: {secretName: key, identityEnv: K, knownHostsEnv: H}}\n  feeds: [{file: a.yaml, cloudProfile: a}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode("v.yaml", data)
		if err != nil {
			var decodeErr *DecodeError
			if !errors.As(err, &decodeErr) {
				t.Fatalf("not a DecodeError: %v", err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "v.yaml: ") {
					t.Fatalf("a problem that does not name the file: %q", line)
				}
			}
			return
		}
		s := file.Schedule
		for _, d := range []int64{int64(s.PreviewDuration), int64(s.ExpiryAfterDeprecation), int64(s.RetirementAge)} {
			if d < 0 || d > int64(MaxDuration) {
				t.Fatalf("a schedule out of bounds: %+v", s)
			}
		}
		if len(file.Sources) == 0 || len(file.Sources) > MaxSources {
			t.Fatalf("%d sources", len(file.Sources))
		}
		for _, source := range file.Sources {
			if (source.Git == nil) == (source.OCI == nil) {
				t.Fatalf("source %s is of both kinds or none", source.Name)
			}
			if source.TagPattern == nil || source.TagPattern.NumSubexp() < 1 || len(source.Feeds) == 0 {
				t.Fatalf("source %s cannot be followed: %+v", source.Name, source)
			}
			for _, feed := range source.Feeds {
				if feed.File == "" || feed.CloudProfile == "" || (source.OCI != nil) != (feed.MachineImage != "") {
					t.Fatalf("source %s has a feed that cannot be followed: %+v", source.Name, feed)
				}
			}
			source.Version("v1.2.3")
			if source.Git != nil {
				// Only what the sources read: https, http and ssh (also
				// scp-like); over ssh, a key and known_hosts together.
				scheme, err := GitURLScheme(source.Git.URL)
				if err != nil || (scheme != "https" && scheme != "http" && scheme != "ssh") {
					t.Fatalf("source %s has a Git URL the sources do not read: %q (%s, %v)", source.Name, source.Git.URL, scheme, err)
				}
				if c := source.Git.Credentials; c != nil && scheme == "ssh" && (c.IdentityEnv == "") != (c.KnownHostsEnv == "") {
					t.Fatalf("source %s reads a key without known_hosts, or the other way round: %+v", source.Name, c)
				}
			}
		}
	})
}
