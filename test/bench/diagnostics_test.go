package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// profile writes CPU profiles of kube-apiserver and of the manager (if it
// serves them) over the given time into the directory
// profileVariable names, if it is set. The channel closes when
// they are written.
func (s *sideBySide) profile(d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	dir := os.Getenv(profileVariable)
	if dir == "" {
		close(done)
		return done
	}
	fetch := func(c *http.Client, base, name string) {
		saveProfile(s.b, c, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(base, "/"), int(d.Seconds())),
			filepath.Join(dir, s.repo+"-"+name+".pprof"))
	}
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		wg.Go(func() { fetch(s.apiServerClient, s.env.Config.Host, "kube-apiserver") })
		if s.pprofAddr != "" {
			wg.Go(func() { fetch(http.DefaultClient, "http://"+s.pprofAddr, "manager") })
		}
		wg.Wait()
	}()
	return done
}

// heapProfile writes the manager's heap profile into the directory
// profileVariable names, if it is set and the manager serves profiles.
func (s *sideBySide) heapProfile() {
	dir := os.Getenv(profileVariable)
	if dir == "" || s.pprofAddr == "" {
		return
	}
	saveProfile(s.b, http.DefaultClient, "http://"+s.pprofAddr+"/debug/pprof/heap", filepath.Join(dir, s.repo+"-manager-heap.pprof"))
}

// saveProfile writes what a pprof endpoint answers into a file; a failure
// is logged, since profiles only help to read the figures.
func saveProfile(b *testing.B, c *http.Client, url, path string) {
	resp, err := c.Get(url)
	if err != nil {
		b.Logf("profile %s: %v", url, err)
		return
	}
	defer resp.Body.Close()
	profile, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(path, profile, 0o644)
	}
	if err != nil {
		b.Logf("profile %s: %v", url, err)
	}
}

// metricSample is one sample of a metric in Prometheus' text format.
type metricSample struct {
	labels map[string]string
	value  float64
}

// metricLabels are the label pairs of a sample.
var metricLabels = regexp.MustCompile(`(\w+)="([^"]*)"`)

// readMetric reads the samples of one metric from a metrics endpoint.
func readMetric(b *testing.B, c *http.Client, url, name string) []metricSample {
	resp, err := c.Get(url)
	if err != nil {
		b.Fatalf("read %s: %v", url, err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatalf("read %s: %v", url, err)
	}
	var samples []metricSample
	for _, line := range strings.Split(string(text), "\n") {
		sampleText, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		labelText, value, _ := strings.Cut(sampleText, "} ")
		sample := metricSample{labels: map[string]string{}}
		for _, m := range metricLabels.FindAllStringSubmatch(labelText, -1) {
			sample.labels[m[1]] = m[2]
		}
		sample.value, _ = strconv.ParseFloat(value, 64)
		samples = append(samples, sample)
	}
	return samples
}

// profileRequests counts kube-apiserver's requests for CloudProfiles and
// NamespacedCloudProfiles so far, by verb, resource and subresource, from
// its metrics.
func (s *sideBySide) profileRequests() map[string]float64 {
	counts := map[string]float64{}
	for _, sample := range readMetric(s.b, s.apiServerClient, strings.TrimSuffix(s.env.Config.Host, "/")+"/metrics", "apiserver_request_total") {
		labels := sample.labels
		if labels["group"] != v1alpha1.GroupVersion.Group || labels["verb"] == "WATCH" || labels["verb"] == "LIST" {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		if labels["dry_run"] != "" {
			key += " (dry run)"
		}
		counts[key] += sample.value
	}
	return counts
}

// syncPhases sums profilesync_sync_duration_seconds by phase from the
// manager's metrics.
func syncPhases(b *testing.B, url string) string {
	sums := map[string]float64{}
	for _, sample := range readMetric(b, http.DefaultClient, url, "profilesync_sync_duration_seconds_sum") {
		sums[sample.labels["phase"]] += sample.value
	}
	var parts []string
	for phase, seconds := range sums {
		parts = append(parts, fmt.Sprintf("%s %.2fs", phase, seconds))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// requestsSince lists the requests counted between two profileRequests.
func requestsSince(before, after map[string]float64) string {
	var parts []string
	for key, n := range after {
		if d := n - before[key]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", key, d))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
