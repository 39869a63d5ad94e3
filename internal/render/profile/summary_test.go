package profile

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

// repeated returns count problems of object p, built by problem(i).
func repeated(count int, problem func(i int) Problem) Problems {
	problems := make(Problems, count)
	for i := range problems {
		problems[i] = problem(i)
	}
	return problems
}

func badVersion(i int) Problem {
	return Problem{File: "p.yaml", Kind: "CloudProfile", Name: "p",
		Field:   fmt.Sprintf("spec.kubernetes.versions[%d].version", i),
		Message: fmt.Sprintf(`Invalid value: "v1.%d.0": a Kubernetes version must be MAJOR.MINOR.PATCH`, i)}
}

func TestSummarizeCutsARepeatedMistakeShort(t *testing.T) {
	other := Problem{File: "p.yaml", Kind: "CloudProfile", Name: "p", Field: "spec.type", Message: "Required value"}
	tests := []struct {
		name     string
		problems Problems
		want     []string
	}{
		{
			name:     "ten thousand of one mistake keep the first ten and count the rest",
			problems: repeated(10000, badVersion),
			want: append(repeated(10, badVersion).Lines(),
				`p.yaml: CloudProfile/p: spec.kubernetes.versions[*].version: ... and 9,990 more like it`),
		},
		{
			name: "entries named by their version count as one mistake",
			problems: repeated(12, func(i int) Problem {
				p := badVersion(i)
				p.Field = fmt.Sprintf("spec.kubernetes.versions[%d] (v1.%d.0).version", i, i)
				return p
			}),
			want: append(repeated(10, func(i int) Problem {
				p := badVersion(i)
				p.Field = fmt.Sprintf("spec.kubernetes.versions[%d] (v1.%d.0).version", i, i)
				return p
			}).Lines(), `p.yaml: CloudProfile/p: spec.kubernetes.versions[*].version: ... and 2 more like it`),
		},
		{
			name:     "ten of one mistake are all shown",
			problems: repeated(10, badVersion),
			want:     repeated(10, badVersion).Lines(),
		},
		{
			name:     "the count line follows the tenth, other problems keep their place",
			problems: append(append(Problems{other}, repeated(12, badVersion)...), other),
			want: append(append([]string{other.String()}, repeated(10, badVersion).Lines()...),
				`p.yaml: CloudProfile/p: spec.kubernetes.versions[*].version: ... and 2 more like it`,
				other.String()),
		},
		{
			name: "the same field of different objects is not merged",
			problems: repeated(20, func(i int) Problem {
				p := badVersion(0)
				p.Name = fmt.Sprintf("p%d", i%2)
				return p
			}),
			want: repeated(20, func(i int) Problem {
				p := badVersion(0)
				p.Name = fmt.Sprintf("p%d", i%2)
				return p
			}).Lines(),
		},
		{
			name: "different messages at the same field are not merged",
			problems: repeated(11, func(i int) Problem {
				p := badVersion(i)
				if i%2 == 0 {
					p.Message = "Required value"
				}
				return p
			}),
			want: repeated(11, func(i int) Problem {
				p := badVersion(i)
				if i%2 == 0 {
					p.Message = "Required value"
				}
				return p
			}).Lines(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.problems.Summarize().Lines()).To(Equal(tt.want))
		})
	}
}

func TestThousandsSeparatesGroupsOfThreeDigitsWithCommas(t *testing.T) {
	g := NewWithT(t)
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 9990: "9,990", 123456: "123,456", 1234567: "1,234,567", -1000: "-1,000"} {
		g.Expect(thousands(n)).To(Equal(want), "%d", n)
	}
}
