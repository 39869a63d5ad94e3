package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// printView prints, for one landscape, what `kubectl get -o wide` shows of
// the three kinds and the upcoming transitions. The tables come from the API
// server's Table format, the one kubectl prints, so the view needs no kubectl.
func (l *landscape) printView(ctx context.Context, out io.Writer, now time.Time) error {
	fmt.Fprintf(out, "\n=== Landscape %s ===\n", l.name)
	fmt.Fprintf(out, "export KUBECONFIG=%s\n\n", l.kubeconfig)
	fmt.Fprintln(out, "$ kubectl get cloudprofiles,namespacedcloudprofiles,profilesyncs -A -o wide")
	for _, resource := range []struct{ plural, kind string }{
		{"cloudprofiles", "cloudprofile.core.profilesync.io"},
		{"namespacedcloudprofiles", "namespacedcloudprofile.core.profilesync.io"},
		{"profilesyncs", "profilesync.core.profilesync.io"},
	} {
		table, err := getTable(ctx, l.config, resource.plural)
		if err != nil {
			return err
		}
		printTable(out, table, resource.kind)
		fmt.Fprintln(out)
	}
	return l.printTransitions(ctx, out, now)
}

func getTable(ctx context.Context, cfg *rest.Config, plural string) (*metav1.Table, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(cfg.Host, "/") + "/apis/" + v1alpha1.GroupVersion.String() + "/" + plural
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", plural, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("list %s: %s: %s", plural, resp.Status, body)
	}
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		return nil, fmt.Errorf("decode %s table: %w", plural, err)
	}
	return &table, nil
}

// printTable prints a Table as kubectl does with -A -o wide: a NAMESPACE
// column for namespaced kinds, upper-case headers, KIND/NAME in the name
// column.
func printTable(out io.Writer, table *metav1.Table, kind string) {
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	defer w.Flush()
	namespaced := false
	for _, row := range table.Rows {
		var meta metav1.PartialObjectMetadata
		if err := json.Unmarshal(row.Object.Raw, &meta); err == nil && meta.Namespace != "" {
			namespaced = true
		}
	}
	var headers []string
	if namespaced {
		headers = append(headers, "NAMESPACE")
	}
	for _, c := range table.ColumnDefinitions {
		headers = append(headers, strings.ToUpper(c.Name))
	}
	fmt.Fprintln(w, strings.Join(headers, "\t"))
	for _, row := range table.Rows {
		var cells []string
		if namespaced {
			var meta metav1.PartialObjectMetadata
			_ = json.Unmarshal(row.Object.Raw, &meta)
			cells = append(cells, meta.Namespace)
		}
		for i, cell := range row.Cells {
			text := fmt.Sprint(cell)
			if cell == nil {
				text = "<none>"
			}
			if i == 0 {
				text = kind + "/" + text
			}
			cells = append(cells, text)
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
}

type transition struct {
	at       time.Time
	profile  string
	version  string
	from, to v1alpha1.VersionClassification
}

// printTransitions lists every version's next lifecycle stage from the
// profiles' status, in time order.
func (l *landscape) printTransitions(ctx context.Context, out io.Writer, now time.Time) error {
	var transitions []transition
	collect := func(profile string, st v1alpha1.ProfileVersionsStatus) {
		add := func(label string, v v1alpha1.VersionStatus) {
			if v.NextTransitionTime != nil && v.NextClassification != nil {
				transitions = append(transitions, transition{at: v.NextTransitionTime.Time, profile: profile,
					version: label, from: v.Classification, to: *v.NextClassification})
			}
		}
		if st.Kubernetes != nil {
			for _, v := range st.Kubernetes.Versions {
				add("kubernetes "+v.Version, v)
			}
		}
		for _, image := range st.MachineImages {
			for _, v := range image.Versions {
				add(image.Name+" "+v.Version, v)
			}
		}
	}
	var cps v1alpha1.CloudProfileList
	if err := l.client.List(ctx, &cps); err != nil {
		return err
	}
	for _, cp := range cps.Items {
		collect("CloudProfile/"+cp.Name, cp.Status.ProfileVersionsStatus)
	}
	var ncps v1alpha1.NamespacedCloudProfileList
	if err := l.client.List(ctx, &ncps); err != nil {
		return err
	}
	for _, ncp := range ncps.Items {
		collect("NamespacedCloudProfile/"+ncp.Namespace+"/"+ncp.Name, ncp.Status.ProfileVersionsStatus)
	}
	sort.SliceStable(transitions, func(i, j int) bool { return transitions[i].at.Before(transitions[j].at) })

	fmt.Fprintf(out, "Upcoming transitions (now: %s):\n", now.UTC().Format(time.RFC3339))
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	defer w.Flush()
	fmt.Fprintln(w, "WHEN\tIN\tPROFILE\tVERSION\tCHANGE")
	for _, t := range transitions {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s → %s\n", t.at.UTC().Format(time.RFC3339), humanDuration(t.at.Sub(now)),
			t.profile, t.version, t.from, t.to)
	}
	return nil
}

// humanDuration rounds d to the nearest unit: the clock moves on from
// --now while run-local waits, and a transition 9 days ahead is still "9d"
// a minute later.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Round(time.Minute).Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Round(time.Hour).Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Round(24*time.Hour).Hours()/24))
	}
}

func printHowToChange(out io.Writer, opts options, repoURL string, first *landscape) {
	clone := "/tmp/profiles"
	fmt.Fprintf(out, `
=== Make a change, as in a pull request ===
  git clone %[1]s %[2]s && cd %[2]s
  # postpone a deprecation, add a version, ... then check it as CI would,
  # from the ProfileSync checkout (or with bin/profilesync from 'make build'):
  go run . build %[2]s/overlays/%[3]s
  go run . timeline -f %[2]s/base
  # and publish it:
  git commit -am "postpone 1.33.5 deprecation" && git push
  # applied within %[4]s:
  KUBECONFIG=%[5]s kubectl get cloudprofiles -w
`, repoURL, clone, first.name, opts.interval, first.kubeconfig)
}
