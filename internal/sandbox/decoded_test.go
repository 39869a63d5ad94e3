package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// TestABuildDecodedInItsChildGivesWhatDecodingTheBuildHereGives: the
// objects, decode problems and warnings that BuildDecoded reads from its
// child are those that profile.DecodeDocuments gives for Build's documents
// in the caller, for a landscape that decodes and for one that does not
// (an unknown field, a value of the wrong type, a kind that is not a
// profile).
func TestABuildDecodedInItsChildGivesWhatDecodingTheBuildHereGives(t *testing.T) {
	landscape := realisticLandscape{cloudProfiles: 2, kubernetes: 20, images: 2, imageVersions: 20}.files()
	broken := map[string]string{
		"kustomization.yaml": "resources:\n- a.yaml\n- b.yaml\n- c.yaml\n",
		"a.yaml":             "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: a\nspec:\n  type: provider\n  colour: blue\n",
		"b.yaml":             "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: b\nspec:\n  type: [provider]\n",
		"c.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	}
	for _, row := range []struct {
		name         string
		files        map[string]string
		path         string
		wantProblems bool
	}{
		{"a landscape whose every profile decodes, through kustomize", landscape, "overlay", false},
		{"a landscape whose every profile decodes, on the linear path", landscape, "base", false},
		{"a landscape with an unknown field, a wrong type and a kind that is not a profile", broken, ".", true},
	} {
		t.Run(row.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeTree(t, root, row.files)
			runner := newRunner(t, Options{})
			docs, wantWarnings, err := runner.Build(context.Background(), root, row.path)
			g.Expect(err).NotTo(HaveOccurred())
			wantObjects, wantProblems := profile.DecodeDocuments(docs)
			if row.wantProblems {
				g.Expect(wantProblems).NotTo(BeEmpty())
			} else {
				g.Expect(wantProblems).To(BeEmpty())
			}

			decoded, err := runner.BuildDecoded(context.Background(), root, row.path)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(decoded.Objects).To(Equal(wantObjects))
			g.Expect(decoded.Problems).To(Equal(wantProblems))
			g.Expect(decoded.Warnings).To(Equal(wantWarnings))
		})
	}
}

// TestABuildDecodedInItsChildIsStillStoppedAtItsLimits: decoding in the
// child changes nothing of its limits. A build over the memory limit fails
// naming the flag, one past its deadline is killed at it, and a build
// limit is still a LimitError.
func TestABuildDecodedInItsChildIsStillStoppedAtItsLimits(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		writeTree(t, root, largeObjects())
		_, err := newRunner(t, Options{Memory: 192 << 20}).BuildDecoded(context.Background(), root, ".")
		var limit *ProcessLimitError
		g.Expect(errors.As(err, &limit)).To(BeTrue(), "errors.As(%v, *ProcessLimitError)", err)
		g.Expect(err).To(MatchError("build of . stopped: it went past the memory limit of 192Mi (raise it with --build-memory-limit)"))
	})
	t.Run("deadline", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		writeTree(t, root, manyObjects(slowObjects))
		runner := newRunner(t, Options{Concurrency: 1, Limits: slowLimits})
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := runner.BuildDecoded(ctx, root, ".")
		g.Expect(err).To(MatchError(ContainSubstring("kustomize build of . abandoned: context deadline exceeded")))
		g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
	})
	t.Run("objects", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		writeTree(t, root, manyObjects(3))
		_, err := newRunner(t, Options{Limits: overlay.Limits{MaxObjects: 2}}).BuildDecoded(context.Background(), root, ".")
		g.Expect(errors.Is(err, overlay.ErrLimitExceeded)).To(BeTrue(), "%v", err)
	})
}
