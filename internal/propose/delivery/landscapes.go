package delivery

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/propose"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
)

// Build builds the overlay at dir of the work tree root, as the sync
// does: the CLI and the controller run it in the build sandbox
// (internal/sandbox), which this package does not import.
type Build func(ctx context.Context, root, dir string) ([]profile.Document, error)

// kustomizationFiles are the names kustomize reads a kustomization from.
var kustomizationFiles = map[string]bool{"kustomization.yaml": true, "kustomization.yml": true, "Kustomization": true}

// landscape is a directory of the tree that builds, as it is before the
// proposals: its policy and what its build's profiles already refuse.
type landscape struct {
	dir     string
	checker *propose.Checker
	// decodeProblems are the build's decoding problems before the
	// proposals, without their field paths.
	decodeProblems map[string]bool
}

// checkLandscapes keeps of result's proposals those that every directory of
// the tree with a kustomization, built with them, still accepts: it builds,
// and its profiles (an overlay's patches applied) pass the validation and
// the policy nearest to it now and at every transition the proposals
// schedule, adding no refusal to those it had before. The engine checks the
// profiles' files; this checks what each landscape makes of them. A
// directory that does not build before the proposals is not one they can
// break, and is passed over. Proposals are tried all at once, then, when
// a landscape refuses them, one by one in their order, each on those
// accepted before it; a refused one is skipped, naming the landscape.
func checkLandscapes(ctx context.Context, opts Options, reader *repofile.Reader, objects []profile.Object, result *propose.Result) (*propose.Result, error) {
	if opts.Build == nil || len(result.Proposals) == 0 {
		return result, nil
	}
	dirs, err := kustomizationDirs(reader)
	if err != nil {
		return nil, err
	}
	var landscapes []landscape
	for _, dir := range dirs {
		docs, err := opts.Build(ctx, reader.Root(), dir)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("building %s before the proposals: %w", dir, err)
			}
			continue
		}
		p, _, err := policy.Find(reader.Root(), dir, opts.ReadLimits.MaxFileSize)
		if err != nil {
			return nil, err
		}
		built, problems := profile.DecodeDocuments(docs)
		landscapes = append(landscapes, landscape{dir: dir, checker: propose.NewChecker(built, p, opts.Now), decodeProblems: problemKeys(problems)})
	}
	if len(landscapes) == 0 {
		return result, nil
	}
	scratch, err := os.MkdirTemp("", "profilesync-propose-landscapes-")
	if err != nil {
		return nil, fmt.Errorf("writing the tree to build the landscapes with the proposals: %w", err)
	}
	defer func() { _ = os.RemoveAll(scratch) }()
	if err := CopyTree(reader, scratch); err != nil {
		return nil, err
	}
	tree := &scratchTree{reader: reader, root: scratch, written: map[string]bool{}}

	refusal, err := tree.refusal(ctx, opts.Build, landscapes, result.Proposals)
	if err != nil {
		return nil, err
	}
	if refusal == "" {
		return result, nil
	}
	checked := &propose.Result{Skipped: result.Skipped}
	for _, p := range result.Proposals {
		refusal, err := tree.refusal(ctx, opts.Build, landscapes, append(append([]propose.Proposal{}, checked.Proposals...), p))
		if err != nil {
			return nil, err
		}
		if refusal != "" {
			checked.Skipped = append(checked.Skipped, propose.Skip{Source: p.Source, Target: p.Target, Version: p.Edits[0].Version,
				Reason: "not proposed, it would be refused: " + refusal})
			continue
		}
		checked.Proposals = append(checked.Proposals, p)
	}
	var edits []propose.Edit
	for _, p := range checked.Proposals {
		edits = append(edits, p.Edits...)
	}
	if checked.Profiles, err = propose.ApplyEdits(objects, edits); err != nil {
		return nil, err
	}
	return checked, nil
}

// scratchTree is a copy of the tree that proposals are written into, to
// be built; files the last proposals changed are restored before the next.
type scratchTree struct {
	reader  *repofile.Reader
	root    string
	written map[string]bool
}

// refusal writes proposals into the scratch tree and builds every
// landscape: the first refusal they add, naming the landscape, or "".
func (s *scratchTree) refusal(ctx context.Context, build Build, landscapes []landscape, proposals []propose.Proposal) (string, error) {
	var edits []propose.Edit
	for _, p := range proposals {
		edits = append(edits, p.Edits...)
	}
	if refusal, err := s.write(edits); refusal != "" || err != nil {
		return refusal, err
	}
	for _, l := range landscapes {
		docs, err := build(ctx, s.root, l.dir)
		if err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("building %s with the proposals: %w", l.dir, err)
			}
			return fmt.Sprintf("%s does not build: %s", l.dir, strings.TrimSpace(err.Error())), nil
		}
		built, problems := profile.DecodeDocuments(docs)
		for _, p := range problems {
			if !l.decodeProblems[problemKey(p)] {
				return fmt.Sprintf("%s: %s", l.dir, p.String()), nil
			}
		}
		if refusals := l.checker.Refusals(built, edits); len(refusals) > 0 {
			more := ""
			if len(refusals) > 1 {
				more = fmt.Sprintf(" (and %d more)", len(refusals)-1)
			}
			return fmt.Sprintf("%s: %s%s", l.dir, refusals[0], more), nil
		}
	}
	return "", nil
}

// write makes edits in the scratch tree's files, and puts back those that
// earlier edits changed and these do not. An edit that cannot be made
// without the proposals left out is a refusal.
func (s *scratchTree) write(edits []propose.Edit) (string, error) {
	byFile := map[string][]propose.Edit{}
	for _, e := range edits {
		byFile[e.Target.File] = append(byFile[e.Target.File], e)
	}
	files := make([]string, 0, len(byFile)+len(s.written))
	for f := range byFile {
		files = append(files, f)
	}
	for f := range s.written {
		if _, ok := byFile[f]; !ok {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	for _, f := range files {
		content, err := s.reader.ReadFile(f)
		if err != nil {
			return "", err
		}
		if fileEdits, ok := byFile[f]; ok {
			if content, err = propose.EditFile(f, content, fileEdits); err != nil {
				return err.Error(), nil
			}
		}
		if err := os.WriteFile(filepath.Join(s.root, filepath.FromSlash(f)), content, 0o644); err != nil {
			return "", fmt.Errorf("writing %s to build the landscapes with the proposals: %w", f, err)
		}
		s.written[f] = true
	}
	return "", nil
}

// kustomizationDirs are the directories of the tree that hold a
// kustomization, sorted.
func kustomizationDirs(reader *repofile.Reader) ([]string, error) {
	files, err := reader.Files(".", func(name string) bool { return kustomizationFiles[name] })
	if err != nil {
		return nil, fmt.Errorf("listing the kustomizations of the repository: %w", err)
	}
	var dirs []string
	seen := map[string]bool{}
	for _, f := range files {
		if dir := path.Dir(f); !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
	}
	return dirs, nil
}

func problemKey(p profile.Problem) string {
	p.Field = ""
	return p.String()
}

func problemKeys(problems profile.Problems) map[string]bool {
	out := make(map[string]bool, len(problems))
	for _, p := range problems {
		out[problemKey(p)] = true
	}
	return out
}
