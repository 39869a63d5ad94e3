package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/cli"
	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/gitserver"
)

// soakLine is a soak of the rollout file, its value to be replaced.
var soakLine = regexp.MustCompile(`(?m)^(\s*soak:\s*)\S+`)

// withSoak sets every soak of the served rollout file to soak.
func withSoak(files map[string]string, soak time.Duration) {
	if content, ok := files[rollout.FileName]; ok {
		files[rollout.FileName] = soakLine.ReplaceAllString(content, "${1}"+soak.String())
	}
}

// startingAt is a clock that reads start at the moment it is made and moves
// on with real time, so that a demo of a given day still sees soaks end and
// the sync's requeues fire.
func startingAt(start time.Time) clock.PassiveClock {
	return offsetClock{offset: time.Until(start)}
}

type offsetClock struct{ offset time.Duration }

func (c offsetClock) Now() time.Time                  { return time.Now().Add(c.offset) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// tourChange is the commit the tour pushes: 1.34.2 becomes supported a week
// later than planned, in every landscape.
var tourChange = struct{ file, from, to, message string }{
	file:    "base/cloudprofiles.yaml",
	from:    "        startTime: \"2027-01-15T00:00:00Z\"\n    - version: 1.34.3",
	to:      "        startTime: \"2027-01-22T00:00:00Z\"\n    - version: 1.34.3",
	message: "Support 1.34.2 a week later",
}

// showRollout pushes one commit and shows it roll out as the rollout file
// says: dev takes it at once, prod once dev has held it, Ready, for the
// soak; `profilesync rollout status` before and after.
func showRollout(ctx context.Context, out io.Writer, opts options, server *gitserver.Server, running []*landscape, clk clock.PassiveClock) error {
	url := server.RepoURL("profiles")
	fmt.Fprintf(out, "\n=== A commit rolls out: dev at once, prod after dev has held it for %s (%s) ===\n", opts.soak, rollout.FileName)
	for _, l := range running {
		if err := l.waitRecorded(ctx, "", opts.readyTimeout); err != nil {
			return fmt.Errorf("landscape %s: %w", l.name, err)
		}
	}
	if err := printRolloutStatus(out, url, clk, false); err != nil {
		return err
	}
	files, err := gitserver.ReadTree(opts.repoDir)
	if err != nil {
		return err
	}
	content := files[tourChange.file]
	if !strings.Contains(content, tourChange.from) {
		return fmt.Errorf("%s no longer has the line the tour changes", tourChange.file)
	}
	sha, err := server.Commit("profiles", map[string]string{tourChange.file: strings.Replace(content, tourChange.from, tourChange.to, 1)}, tourChange.message)
	if err != nil {
		return fmt.Errorf("push the tour's commit: %w", err)
	}
	pushed := time.Now()
	fmt.Fprintf(out, "\n$ git commit -am %q && git push   # %s\n", tourChange.message, sha[:12])
	for _, l := range running {
		// As a push hook would (docs/gitops.md): sync now, not at the interval.
		if err := l.requestSync(ctx, clk); err != nil {
			return err
		}
	}
	for i, l := range running {
		if err := l.waitRecorded(ctx, sha, opts.soak+opts.readyTimeout); err != nil {
			return fmt.Errorf("landscape %s: %w", l.name, err)
		}
		fmt.Fprintf(out, "\n%s applied %s and recorded it, %s after the push\n", l.name, sha[:12], time.Since(pushed).Round(time.Second))
		// The record is a push too: the Git host's push hook would tell the
		// landscapes after it, which then wake exactly when the soak ends.
		for _, next := range running[i+1:] {
			if err := next.requestSync(ctx, clk); err != nil {
				return err
			}
		}
		// Between the landscapes: what the next one waits for, and until
		// when; at the end, where every version stands in each.
		if err := printRolloutStatus(out, url, clk, i == len(running)-1); err != nil {
			return err
		}
	}
	return nil
}

// printRolloutStatus prints `profilesync rollout status` of the served
// repository at the operators' now: --at takes whole seconds, so it is the
// next whole second, which includes a record made in this one. Without
// matrix only the landscapes' table is kept: the matrix is the same while a
// commit is on its way.
func printRolloutStatus(out io.Writer, url string, clk clock.PassiveClock, matrix bool) error {
	at := clk.Now().Add(time.Second).Truncate(time.Second)
	args := []string{"rollout", "status", url, "--at", at.UTC().Format(time.RFC3339)}
	fmt.Fprintf(out, "\n$ profilesync %s\n", strings.Join(args, " "))
	var stdout, stderr bytes.Buffer
	if code := cli.Execute(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		return fmt.Errorf("profilesync rollout status: exit status %d: %s", code, stderr.String())
	}
	report := stdout.String()
	if before, _, found := strings.Cut(report, "\nPROFILE "); found && !matrix {
		report = before
	}
	_, err := io.WriteString(out, report+stderr.String())
	return err
}

// requestSync asks the landscape's ProfileSync to sync now.
func (l *landscape) requestSync(ctx context.Context, clk clock.PassiveClock) error {
	var sync v1alpha1.ProfileSync
	key := client.ObjectKey{Namespace: operatorNamespace, Name: l.name}
	if err := l.client.Get(ctx, key, &sync); err != nil {
		return err
	}
	patch := client.MergeFrom(sync.DeepCopy())
	if sync.Annotations == nil {
		sync.Annotations = map[string]string{}
	}
	sync.Annotations[meta.ReconcileRequestAnnotation] = clk.Now().UTC().Format(time.RFC3339Nano)
	return l.client.Patch(ctx, &sync, patch)
}

// waitRecorded waits until the landscape's ProfileSync has applied revision
// sha (any revision when sha is empty), every profile is Ready again, and
// the landscape's record of it is pushed, so that rollout status sees it.
func (l *landscape) waitRecorded(ctx context.Context, sha string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var sync v1alpha1.ProfileSync
		if err := l.client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: l.name}, &sync); err != nil {
			return err
		}
		l.reportWaiting(&sync)
		applied := sync.Status.LastAppliedRevision
		if applied != "" && strings.HasSuffix(applied, sha) && sync.Status.Rollout != nil &&
			sync.Status.Rollout.RecordedRevision != "" && strings.HasSuffix(applied, sync.Status.Rollout.RecordedRevision) {
			if ready, _, err := l.allReady(ctx); err != nil || ready {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no record of %q after %s: applied %q: %w", sha, timeout, applied, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// reportWaiting prints, once per candidate and eligibility, that the
// landscape waits for a newer commit, until when and for whom
// (status.rollout.waiting): a wait for a soak is otherwise a silent minute.
func (l *landscape) reportWaiting(sync *v1alpha1.ProfileSync) {
	if l.out == nil || sync.Status.Rollout == nil || sync.Status.Rollout.Waiting == nil {
		return
	}
	waiting := sync.Status.Rollout.Waiting
	revision := waiting.Revision
	if len(revision) > 12 {
		revision = revision[:12]
	}
	line := fmt.Sprintf("%s waits for %s", l.name, revision)
	if waiting.EligibleAt != nil {
		line += " until " + waiting.EligibleAt.UTC().Format(time.RFC3339)
	}
	var upstreams []string
	for _, u := range waiting.Upstreams {
		switch {
		case u.Refused:
			upstreams = append(upstreams, u.Landscape+" refused it")
		case u.Since != nil:
			upstreams = append(upstreams, u.Landscape+" has held it since "+u.Since.UTC().Format(time.RFC3339))
		default:
			upstreams = append(upstreams, u.Landscape+" does not hold it yet")
		}
	}
	if len(upstreams) > 0 {
		line += " (" + strings.Join(upstreams, ", ") + ")"
	}
	if line == l.lastWaiting {
		return
	}
	l.lastWaiting = line
	fmt.Fprintf(l.out, "\n%s\n", line)
}
