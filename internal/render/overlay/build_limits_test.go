package overlay

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/builders"
)

// paddedProfile is a CloudProfile of exactly size bytes (a comment makes up
// the difference).
func paddedProfile(t *testing.T, name string, size int) string {
	t.Helper()
	profile := fmt.Sprintf(minimalCloudProfile, name) + "# "
	if len(profile)+1 > size {
		t.Fatalf("a profile needs at least %d bytes", len(profile)+1)
	}
	return profile + strings.Repeat("x", size-len(profile)-1) + "\n"
}

func TestBuildLimits(t *testing.T) {
	const fileSize = 2000
	// The annotation is read once but rendered on each of the three
	// profiles, so the output is larger than what is read.
	annotated := map[string]string{
		"kustomization.yaml": kustomization("a.yaml", "b.yaml", "c.yaml") + "commonAnnotations:\n  note: " + strings.Repeat("n", 3000) + "\n",
		"a.yaml":             fmt.Sprintf(minimalCloudProfile, "a"),
		"b.yaml":             fmt.Sprintf(minimalCloudProfile, "b"),
		"c.yaml":             fmt.Sprintf(minimalCloudProfile, "c"),
	}
	renderedSize := func(t *testing.T) int64 {
		root := t.TempDir()
		builders.WriteTree(t, root, annotated)
		docs, err := buildWithDefaults(t, root, ".")
		if err != nil {
			t.Fatal(err)
		}
		var size int64
		for _, doc := range docs {
			size += int64(len(doc.Data))
		}
		return size
	}(t)

	tests := []struct {
		name   string
		files  map[string]string
		limits Limits
		// wantErr is empty when the build must succeed.
		wantErr string
	}{
		{
			name:   "a file of exactly the maximum file size is read",
			files:  map[string]string{"kustomization.yaml": kustomization("p.yaml"), "p.yaml": paddedProfile(t, "p", fileSize)},
			limits: Limits{MaxFileSize: fileSize, MaxRenderedSize: DefaultMaxRenderedSize},
		},
		{
			name:    "a file one byte over the maximum file size is refused naming it and the flag",
			files:   map[string]string{"kustomization.yaml": kustomization("p.yaml"), "p.yaml": paddedProfile(t, "p", fileSize+1)},
			limits:  Limits{MaxFileSize: fileSize, MaxRenderedSize: DefaultMaxRenderedSize},
			wantErr: "p.yaml: 2001 bytes is over the maximum file size of 2000 bytes (raise it with --max-file-size)",
		},
		{
			name:    "an oversized kustomization is refused too",
			files:   map[string]string{"kustomization.yaml": kustomization("p.yaml") + "# " + strings.Repeat("x", fileSize) + "\n", "p.yaml": fmt.Sprintf(minimalCloudProfile, "p")},
			limits:  Limits{MaxFileSize: fileSize, MaxRenderedSize: DefaultMaxRenderedSize},
			wantErr: "kustomization.yaml: 2",
		},
		{
			name:   "output of exactly the maximum rendered size is accepted",
			files:  annotated,
			limits: Limits{MaxFileSize: DefaultMaxFileSize, MaxRenderedSize: renderedSize},
		},
		{
			name:    "output one byte over the maximum rendered size is refused naming the flag",
			files:   annotated,
			limits:  Limits{MaxFileSize: DefaultMaxFileSize, MaxRenderedSize: renderedSize - 1},
			wantErr: fmt.Sprintf(".: %d bytes is over the maximum rendered size of %d bytes (raise it with --max-rendered-size)", renderedSize, renderedSize-1),
		},
		{
			name: "reading more than the maximum rendered size is refused naming the file that went past it",
			files: map[string]string{
				"kustomization.yaml": kustomization("a.yaml", "b.yaml"),
				"a.yaml":             paddedProfile(t, "a", 1500),
				"b.yaml":             paddedProfile(t, "b", 1500),
			},
			limits:  Limits{MaxFileSize: DefaultMaxFileSize, MaxRenderedSize: 2500},
			wantErr: "b.yaml: ",
		},
		{
			name: "YAML aliases that expand past the maximum file size are refused before kustomize expands them",
			files: map[string]string{
				"kustomization.yaml": kustomization("bomb.yaml"),
				"bomb.yaml":          billionLaughs,
			},
			limits:  DefaultLimits(),
			wantErr: "bomb.yaml: exceeds the maximum file size (with its YAML aliases written out) of 4 MiB (raise it with --max-file-size)",
		},
		{
			name: "a self-referencing alias is refused",
			files: map[string]string{
				"kustomization.yaml": kustomization("loop.yaml"),
				"loop.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loop\ndata: &d\n  self: *d\n",
			},
			limits:  DefaultLimits(),
			wantErr: "loop.yaml: ",
		},
		{
			name: "objects up to the maximum are built, counting every document of every file",
			files: map[string]string{
				"kustomization.yaml": kustomization("a.yaml", "b.yaml"),
				"a.yaml":             fmt.Sprintf(minimalCloudProfile, "a1") + "---\n" + fmt.Sprintf(minimalCloudProfile, "a2"),
				"b.yaml":             fmt.Sprintf(minimalCloudProfile, "b"),
			},
			limits: Limits{MaxObjects: 3},
		},
		{
			name: "one object over the maximum is refused naming the file that went past it and the flag",
			files: map[string]string{
				"kustomization.yaml": kustomization("a.yaml", "b.yaml"),
				"a.yaml":             fmt.Sprintf(minimalCloudProfile, "a1") + "---\n" + fmt.Sprintf(minimalCloudProfile, "a2"),
				"b.yaml":             fmt.Sprintf(minimalCloudProfile, "b"),
			},
			limits:  Limits{MaxObjects: 2},
			wantErr: "b.yaml: 3 objects read in all are over the maximum number of objects a build reads of 2 (raise it with --max-objects)",
		},
		{
			name: "the items of a List count one by one",
			files: map[string]string{
				"kustomization.yaml": kustomization("list.yaml"),
				"list.yaml":          "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(fmt.Sprintf(minimalCloudProfile, "x"), "\n", "\n  ") + "\n- " + strings.ReplaceAll(fmt.Sprintf(minimalCloudProfile, "y"), "\n", "\n  ") + "\n",
			},
			limits:  Limits{MaxObjects: 1},
			wantErr: "list.yaml: 2 objects read in all are over the maximum number of objects a build reads of 1 (raise it with --max-objects)",
		},
		{
			name: "a directory without a kustomization counts its files' objects too",
			files: map[string]string{
				"a.yaml": fmt.Sprintf(minimalCloudProfile, "a"),
				"b.yaml": fmt.Sprintf(minimalCloudProfile, "b"),
			},
			limits:  Limits{MaxObjects: 1},
			wantErr: "b.yaml: 2 objects read in all are over the maximum number of objects a build reads of 1 (raise it with --max-objects)",
		},
		{
			name: "YAML anchors used the way profiles use them are accepted",
			files: map[string]string{
				"kustomization.yaml": kustomization("p.yaml"),
				"p.yaml": `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: anchored
spec:
  type: local
  kubernetes:
    versions:
    - version: 1.31.1
      lifecycle: &stages
      - classification: supported
        startTime: "2025-01-01T00:00:00Z"
    - version: 1.31.0
      lifecycle: *stages
`,
			},
			limits: DefaultLimits(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			builders.WriteTree(t, root, tt.files)
			docs, err := Build(context.Background(), root, ".", tt.limits)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(docs).NotTo(BeEmpty())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(errors.Is(err, ErrLimitExceeded)).To(BeTrue(), "errors.Is(err, ErrLimitExceeded)")
			g.Expect(docs).To(BeNil())
		})
	}
}

// billionLaughs is a few hundred bytes that a YAML library copying aliases
// turns into 10^9 strings.
var billionLaughs = func() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n  l0: &l0 \"lol\"\n")
	for level := 1; level <= 9; level++ {
		fmt.Fprintf(&b, "  l%d: &l%d [", level, level)
		for i := range 10 {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", level-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}()

// componentChain is a chain of depth components, c<depth-1> including
// c<depth-2> and so on down to c0, an empty component: kustomize's error
// for it doubles at every level.
func componentChain(depth int) map[string]string {
	files := map[string]string{"kustomization.yaml": "resources: []\ncomponents:\n- c" + fmt.Sprint(depth-1) + "\n"}
	for i := 0; i < depth; i++ {
		content := "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
		if i > 0 {
			content += fmt.Sprintf("components:\n- ../c%d\n", i-1)
		}
		files[fmt.Sprintf("c%d/kustomization.yaml", i)] = content
	}
	files["c0/kustomization.yaml"] = ""
	return files
}

func TestComponentsNestedTooDeepAreRefusedBeforeTheirErrorGrows(t *testing.T) {
	for _, depth := range []int{maxComponentDepth + 1, 34} {
		t.Run(fmt.Sprintf("%d components", depth), func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			builders.WriteTree(t, root, componentChain(depth))
			_, err := Build(context.Background(), root, ".", DefaultLimits())
			g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("components nest %d deep, more than the %d a build allows", maxComponentDepth+1, maxComponentDepth))))
			g.Expect(len(err.Error())).To(BeNumerically("<", 4<<10), "the error stays small")
		})
	}
	t.Run("a chain as deep as allowed builds as kustomize builds it", func(t *testing.T) {
		root := t.TempDir()
		files := componentChain(maxComponentDepth)
		files["c0/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncommonAnnotations:\n  chained: \"yes\"\n"
		builders.WriteTree(t, root, files)
		if _, err := Build(context.Background(), root, ".", DefaultLimits()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestExpandedYAMLSize(t *testing.T) {
	g := NewWithT(t)
	g.Expect(expandedYAMLSize([]byte("a: [x, y]\n"), 1000)).To(Equal(expandedYAMLSize([]byte("a: &v [x, y]\n"), 1000)),
		"an anchor costs nothing by itself")
	once := expandedYAMLSize([]byte("a: &v [x, y]\n"), 1000)
	twice := expandedYAMLSize([]byte("a: &v [x, y]\nb: *v\n"), 1000)
	g.Expect(twice).To(BeNumerically(">", once), "an alias counts what it repeats")
	start := time.Now()
	g.Expect(expandedYAMLSize([]byte(billionLaughs), 1<<20)).To(BeNumerically(">", 1<<20))
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Second), "measuring stops once past the limit")
}

func TestABuildIsAbandonedWhenItsContextEnds(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	docs, err := Build(ctx, filepath.Join(profilesRepo), filepath.Join("overlays", "dev"), DefaultLimits())
	g.Expect(docs).To(BeNil())
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
}
