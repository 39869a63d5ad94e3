package statuspatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/statuspatch"
	"github.com/profilesync/profilesync/test/procstat"
)

// BenchmarkStatusWrite writes the status of NamespacedCloudProfiles whose
// merged profile has 600 versions (100 Kubernetes versions, 10 machine images
// of 50 versions, all with 4-stage lifecycles: the shape of test/bench's
// landscape), as the JSON patch alone (a plain client) and as the update of
// the status subresource (statuspatch.NewClient's), and reports
// kube-apiserver's CPU per write. "first" writes a status where there was
// none (a first sync), "again" replaces a written one (its Ready message).
// Writes run one at a time, each of its own object; the API server's CPU is
// counted over the writes only, after a pause that lets the creates and
// reads of the objects settle.
//
//	go test ./controllers/statuspatch/ -run '^$' -bench BenchmarkStatusWrite -benchtime 100x
func BenchmarkStatusWrite(b *testing.B) {
	apiserver, err := procstat.ChildProcess("kube-apiserver")
	if err != nil {
		b.Fatal(err)
	}
	operator, err := statuspatch.NewClient(env.Client, env.Config, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, write := range []struct {
		name   string
		client client.Client
	}{{"patch", env.Client}, {"update", operator}} {
		for _, again := range []bool{false, true} {
			name := write.name + "/first"
			if again {
				name = write.name + "/again"
			}
			b.Run(name, func(b *testing.B) {
				benchmarkStatusWrites(b, apiserver, write.client, again)
			})
		}
	}
}

func benchmarkStatusWrites(b *testing.B, apiserver int, c client.Client, again bool) {
	ctx := context.Background()
	ns := namespace(b)
	befores := make([]*v1alpha1.NamespacedCloudProfile, b.N)
	afters := make([]*v1alpha1.NamespacedCloudProfile, b.N)
	for i := range b.N {
		before := namespacedProfile(b, ns, fmt.Sprintf("bench-%05d", i))
		if again {
			written := withStatus(before, "the first status", 100, 10, 50)
			if err := statuspatch.Write(ctx, env.Client, before, written, &written.Status); err != nil {
				b.Fatal(err)
			}
			before = &v1alpha1.NamespacedCloudProfile{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(written), before); err != nil {
				b.Fatal(err)
			}
		}
		befores[i] = before
		afters[i] = withStatus(before, fmt.Sprintf("write %d", i), 100, 10, 50)
	}
	time.Sleep(2 * time.Second) // the creates' and reads' work done, their garbage collected
	start := cpuSeconds(b, apiserver)
	b.ResetTimer()
	for i := range b.N {
		if err := statuspatch.Write(ctx, c, befores[i], afters[i], &afters[i].Status); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	time.Sleep(100 * time.Millisecond) // the watch cache's part of the last writes
	b.ReportMetric((cpuSeconds(b, apiserver)-start)*1000/float64(b.N), "apiserver-CPU-ms/write")
	status, err := json.Marshal(withStatus(&v1alpha1.NamespacedCloudProfile{}, "", 100, 10, 50).Status)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(status))/1000, "status-KB")
}

// cpuSeconds is kube-apiserver's CPU seconds so far, user and system.
func cpuSeconds(b *testing.B, pid int) float64 {
	seconds, err := procstat.CPUSeconds(pid, false)
	if err != nil {
		b.Fatal(err)
	}
	return seconds
}
