package lifecycle

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// Status computes the version part of a profile's status at now (docs/semantics.md §1,
// "Status shape"): every Kubernetes version and every machine image version,
// in spec order, with its classification and, when a later stage is
// scheduled, the next classification and the time it starts. NextTransitionTime
// is the earliest of those times, so a controller requeues exactly then; it is
// nil when nothing is scheduled.
//
// Empty lists are omitted rather than written as empty: Kubernetes is nil when
// the spec has no Kubernetes versions, MachineImages is nil when it has no
// images, and an image without versions has nil Versions.
//
// This is the one status computation: the controllers and the CLI both call
// it. It runs on every reconcile, so it allocates a fixed handful of slices
// whatever the number of versions: the nextClassification and
// nextTransitionTime pointers of all versions point into two shared backing
// arrays. Callers must treat the result as read-only values (as they would
// after DeepCopy) and not write through those pointers.
func Status(spec *v1alpha1.CloudProfileSpec, now time.Time) v1alpha1.ProfileVersionsStatus {
	var status v1alpha1.ProfileVersionsStatus
	if spec == nil {
		return status
	}

	total := len(spec.Kubernetes.Versions)
	for i := range spec.MachineImages {
		total += len(spec.MachineImages[i].Versions)
	}
	if total == 0 && len(spec.MachineImages) == 0 {
		return status
	}

	b := statusBuilder{
		now:             now,
		versions:        make([]v1alpha1.VersionStatus, total),
		classifications: make([]v1alpha1.VersionClassification, 0, total),
		times:           make([]metav1.Time, 0, total),
	}

	if n := len(spec.Kubernetes.Versions); n > 0 {
		out := b.take(n)
		for i := range spec.Kubernetes.Versions {
			b.fill(&out[i], &spec.Kubernetes.Versions[i])
		}
		status.Kubernetes = &v1alpha1.KubernetesStatus{Versions: out}
	}

	if len(spec.MachineImages) > 0 {
		status.MachineImages = make([]v1alpha1.MachineImageStatus, len(spec.MachineImages))
		for i := range spec.MachineImages {
			image := &spec.MachineImages[i]
			status.MachineImages[i].Name = image.Name
			if len(image.Versions) == 0 {
				continue
			}
			out := b.take(len(image.Versions))
			for j := range image.Versions {
				b.fill(&out[j], &image.Versions[j].ExpirableVersion)
			}
			status.MachineImages[i].Versions = out
		}
	}

	if b.hasEarliest {
		// A separate copy, so that the top-level time does not alias the
		// version whose transition it repeats.
		status.NextTransitionTime = &metav1.Time{Time: b.earliest}
	}
	return status
}

// nextProfileTransition returns the earliest time after now at which any
// Kubernetes or machine image version of spec changes classification
// (docs/semantics.md §1.5). ok is false when nothing is scheduled, which means no
// requeue is needed. It computes the same instant as
// Status(spec, now).NextTransitionTime without building the status.
func nextProfileTransition(spec *v1alpha1.CloudProfileSpec, now time.Time) (at time.Time, ok bool) {
	if spec == nil {
		return time.Time{}, false
	}
	consider := func(v *v1alpha1.ExpirableVersion) {
		e := evaluate(*v, now)
		if e.hasNext && (!ok || e.nextAt.Before(at)) {
			at, ok = e.nextAt, true
		}
	}
	for i := range spec.Kubernetes.Versions {
		consider(&spec.Kubernetes.Versions[i])
	}
	for i := range spec.MachineImages {
		for j := range spec.MachineImages[i].Versions {
			consider(&spec.MachineImages[i].Versions[j].ExpirableVersion)
		}
	}
	return at, ok
}

// statusBuilder hands out slices of one preallocated VersionStatus array and
// keeps the pointed-to next classifications and times in two more, so that a
// whole status costs a constant number of allocations.
type statusBuilder struct {
	now             time.Time
	versions        []v1alpha1.VersionStatus
	classifications []v1alpha1.VersionClassification
	times           []metav1.Time
	earliest        time.Time
	hasEarliest     bool
}

// take returns the next n entries of the preallocated array, capped so that
// an append by the caller cannot overwrite the next list.
func (b *statusBuilder) take(n int) []v1alpha1.VersionStatus {
	out := b.versions[:n:n]
	b.versions = b.versions[n:]
	return out
}

func (b *statusBuilder) fill(out *v1alpha1.VersionStatus, v *v1alpha1.ExpirableVersion) {
	e := evaluate(*v, b.now)
	out.Version = v.Version
	out.Classification = e.current
	if !e.hasNext {
		return
	}
	// The backing arrays were allocated with capacity for every version, so
	// these appends never reallocate and earlier pointers stay valid.
	b.classifications = append(b.classifications, e.next)
	b.times = append(b.times, metav1.Time{Time: e.nextAt})
	out.NextClassification = &b.classifications[len(b.classifications)-1]
	out.NextTransitionTime = &b.times[len(b.times)-1]
	if !b.hasEarliest || e.nextAt.Before(b.earliest) {
		b.earliest, b.hasEarliest = e.nextAt, true
	}
}
