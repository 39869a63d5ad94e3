package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzDecode feeds the policy decoder arbitrary files, as anyone who can push
// to the repository can: it never panics, every refusal is a *DecodeError
// naming the file on each line, and a policy it accepts reads back the same
// after being written out again.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(header + "rules:\n  supported: {severity: error, minors: 4}\n  notice: {severity: warning, days: 30}\n"))
	f.Add([]byte(header + "rules:\n  preview: {severity: warning, maxMinors: 1, maxDays: 42}\n  deprecation: {severity: error, olderPatches: true}\n"))
	f.Add([]byte(header + "rules:\n  forcedUpdates: {severity: error}\n  notice: {severity: error, days: x}\n"))
	f.Add([]byte("rules: {supported: {minors: 99999999999999999999}}"))
	f.Add([]byte("- a\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode("policy.yaml", data)
		if err != nil {
			var decodeErr *DecodeError
			if !errors.As(err, &decodeErr) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "policy.yaml: ") {
					t.Fatalf("a problem that does not name the file: %q", line)
				}
			}
			return
		}
		written, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		asYAML, err := yaml.JSONToYAML(written)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode("policy.yaml", asYAML)
		if err != nil {
			t.Fatalf("an accepted policy written out is refused: %v\n%s", err, asYAML)
		}
		rewritten, _ := json.Marshal(again)
		if string(rewritten) != string(written) {
			t.Fatalf("an accepted policy reads back differently:\n%s\n%s", written, rewritten)
		}
	})
}
