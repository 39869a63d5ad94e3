package bench

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// requestCounts counts the manager's API requests by what they do to which
// resource: "APPLY cloudprofiles", "PATCH namespacedcloudprofiles/status",
// "APPLY cloudprofiles (dry run)", "GET profilesyncs". A push is measured by
// what it asks of the API server, which a loaded machine does not change,
// as well as by the time it takes.
type requestCounts struct {
	mu     sync.Mutex
	counts map[string]int
}

// add counts one request.
func (c *requestCounts) add(req *http.Request) {
	key := requestKey(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[key]++
}

// snapshot is a copy of the counts so far.
func (c *requestCounts) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// requestKey names a request by its verb (APPLY for a server-side apply,
// WATCH for a watch), its resource and subresource, and whether it is a dry
// run.
func requestKey(req *http.Request) string {
	verb := req.Method
	switch {
	case verb == http.MethodPatch && req.Header.Get("Content-Type") == "application/apply-patch+yaml":
		verb = "APPLY"
	case verb == http.MethodGet && req.URL.Query().Get("watch") == "true":
		verb = "WATCH"
	}
	key := verb + " " + resourceOf(req.URL.Path)
	if req.URL.Query().Get("dryRun") != "" {
		key += " (dry run)"
	}
	return key
}

// resourceOf is the resource (and subresource) of an API path:
// /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE[/NAME[/SUB]] or
// /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]].
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	default:
		return path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return path
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

// countsSince lists the requests counted between two snapshots, reads of
// the cache's watches left out, sorted by key.
func countsSince(before, after map[string]int) string {
	var parts []string
	for key, n := range after {
		if d := n - before[key]; d > 0 && !strings.HasPrefix(key, "WATCH ") {
			parts = append(parts, fmt.Sprintf("%s %d", key, d))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
