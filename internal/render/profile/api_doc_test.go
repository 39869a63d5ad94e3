package profile

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// specFieldPaths lists every field of a spec type as a JSON path below
// prefix, lists written name[] (spec.kubernetes.versions[].lifecycle[].startTime).
// Inline structs are flattened as JSON flattens them; a type from another
// package (metav1.Time, resource.Quantity, runtime.RawExtension, the label
// selector's fields) and a map are one field each: their shape is not ours.
func specFieldPaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var paths []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if name == "" && f.Anonymous {
			if ft.PkgPath() == reflect.TypeOf(v1alpha1.CloudProfileSpec{}).PkgPath() {
				paths = append(paths, specFieldPaths(ft, prefix)...)
				continue
			}
			// An inline struct of another package: its fields are ours to list.
			for j := range ft.NumField() {
				inner, _, _ := strings.Cut(ft.Field(j).Tag.Get("json"), ",")
				paths = append(paths, prefix+"."+inner)
			}
			continue
		}
		path := prefix + "." + name
		elem := ft
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 {
			elem = ft.Elem()
			path += "[]"
		}
		paths = append(paths, path)
		if elem.Kind() == reflect.Struct && elem.PkgPath() == reflect.TypeOf(v1alpha1.CloudProfileSpec{}).PkgPath() {
			paths = append(paths, specFieldPaths(elem, path)...)
		}
	}
	return paths
}

// documentedFields reads the field paths of docs/api.md's field table: the
// first column of every row of the table under "## Every field".
func documentedFields(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../../docs/api.md")
	if err != nil {
		t.Fatalf("reading docs/api.md: %v", err)
	}
	_, section, found := strings.Cut(string(data), "\n## Every field")
	if !found {
		t.Fatal(`docs/api.md has no "## Every field" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	var fields []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		fields = append(fields, m[1])
	}
	return fields
}

func TestEveryAPIFieldIsInTheFieldTableOfDocsAPI(t *testing.T) {
	g := NewWithT(t)
	fields := append(specFieldPaths(reflect.TypeOf(v1alpha1.CloudProfileSpec{}), "CloudProfile.spec"),
		specFieldPaths(reflect.TypeOf(v1alpha1.NamespacedCloudProfileSpec{}), "NamespacedCloudProfile.spec")...)
	documented := documentedFields(t)

	var missing, unknown []string
	for _, f := range fields {
		if !slices.Contains(documented, f) {
			missing = append(missing, f)
		}
	}
	for _, d := range documented {
		if !slices.Contains(fields, d) {
			unknown = append(unknown, d)
		}
	}
	g.Expect(missing).To(BeEmpty(), "fields of the API types that docs/api.md's field table lacks")
	g.Expect(unknown).To(BeEmpty(), "rows of docs/api.md's field table that name no field of the API types")
}

func TestSpecFieldPathsWalksListsInlinesAndForeignTypes(t *testing.T) {
	g := NewWithT(t)
	paths := specFieldPaths(reflect.TypeOf(v1alpha1.CloudProfileSpec{}), "spec")
	g.Expect(paths).To(ContainElements(
		"spec.kubernetes.versions[].lifecycle[].startTime", // lists, and the inlined ExpirableVersion
		"spec.machineImages[].versions[].version",          // ExpirableVersion inlined into MachineImageVersion
		"spec.seedSelector.matchLabels",                    // metav1.LabelSelector inlined
		"spec.machineTypes[].capabilities",                 // a map is one field
		"spec.caBundle",
	))
	g.Expect(paths).NotTo(ContainElement(HavePrefix("spec.machineTypes[].cpu.")), "a Quantity is one field")
}

// TestEveryFieldOfTheFieldTableNamesItsGardenerRelease checks the column
// Gardener of docs/api.md's field table: every row says which Gardener release
// the field matches, in one of the forms the text above the table explains.
func TestEveryFieldOfTheFieldTableNamesItsGardenerRelease(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile("../../../docs/api.md")
	g.Expect(err).NotTo(HaveOccurred())
	_, section, found := strings.Cut(string(data), "\n## Every field")
	g.Expect(found).To(BeTrue())
	section, _, _ = strings.Cut(section, "\n## ")
	g.Expect(section).To(ContainSubstring("| field | from | Gardener | notes |"))
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|(.*)$")
	const release = `^(≤ )?v1\.[0-9]+$|^PR #[0-9]+$`
	rows := row.FindAllStringSubmatch(section, -1)
	g.Expect(rows).NotTo(BeEmpty())
	for _, m := range rows {
		cells := strings.Split(m[2], "|")
		g.Expect(len(cells)).To(BeNumerically(">=", 3), "%s: a row has the columns from, Gardener and notes", m[1])
		g.Expect(strings.TrimSpace(cells[1])).To(MatchRegexp(release), "%s: the column Gardener names a release or a pull request", m[1])
	}
}
