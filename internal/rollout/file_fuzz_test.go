package rollout

import (
	"errors"
	"strings"
	"testing"
)

// FuzzDecodeRolloutFile feeds the rollout decoder arbitrary files, as anyone
// who can push to the repository can: it never panics, every refusal is a
// *DecodeError naming the file on each line, and a rollout it accepts can be
// followed: names and paths are unique, every upstream is a landscape, no
// cycle, soaks within their bound.
func FuzzDecodeRolloutFile(f *testing.F) {
	f.Add([]byte(threeLandscapes))
	f.Add([]byte(header + "landscapes:\n- {name: a, path: x, after: [b]}\n- {name: b, path: y, after: [a]}\n"))
	f.Add([]byte(header + "landscapes:\n- {name: a, path: x, soak: 1d1h, lag: {preview: {duration: 1h, severity: warning}}}\n"))
	f.Add([]byte(header + "landscapes:\n- {name: a, path: ./x/../y, soak: 99999999999d}\n"))
	f.Add([]byte("- a\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode("rollout.yaml", data)
		if err != nil {
			var decodeErr *DecodeError
			if !errors.As(err, &decodeErr) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "rollout.yaml: ") {
					t.Fatalf("a problem that does not name the file: %q", line)
				}
			}
			return
		}
		names, paths := map[string]int{}, map[string]bool{}
		for i, l := range file.Landscapes {
			if _, seen := names[l.Name]; seen || paths[l.Path] {
				t.Fatalf("landscape %d repeats a name or a path: %+v", i, l)
			}
			names[l.Name], paths[l.Path] = i, true
			if l.Soak < 0 || l.Soak > MaxSoak {
				t.Fatalf("landscape %d has soak %s", i, l.Soak)
			}
		}
		for _, l := range file.Landscapes {
			for _, upstream := range l.After {
				if _, known := names[upstream]; !known {
					t.Fatalf("landscape %s waits for unknown %q", l.Name, upstream)
				}
			}
		}
		if cycle := findCycle(file.Landscapes, names); cycle != nil {
			t.Fatalf("accepted a cycle: %v", cycle)
		}
	})
}
