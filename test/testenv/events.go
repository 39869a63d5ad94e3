package testenv

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventQuery picks the events of one object with one reason; an empty field
// matches any value.
type EventQuery struct {
	// Namespace is where the events are listed; empty lists every namespace.
	Namespace string
	// Kind and Name are those of the involved object.
	Kind, Name string
	// Reason is the event's reason, such as v1alpha1.DriftCorrectedReason.
	Reason string
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
}

// Events are the events q picks, as the API server has them now.
func Events(ctx context.Context, c client.Reader, q EventQuery) ([]corev1.Event, error) {
	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(q.Namespace)); err != nil {
		return nil, fmt.Errorf("list events in namespace %q: %w", q.Namespace, err)
	}
	var picked []corev1.Event
	for _, e := range list.Items {
		if matches(q.Kind, e.InvolvedObject.Kind) && matches(q.Name, e.InvolvedObject.Name) &&
			matches(q.Reason, e.Reason) && matches(q.Type, e.Type) {
			picked = append(picked, e)
		}
	}
	return picked, nil
}

func matches(want, got string) bool { return want == "" || want == got }

// Messages are the messages of events, one an event.
func Messages(events []corev1.Event) []string {
	messages := make([]string, 0, len(events))
	for _, e := range events {
		messages = append(messages, e.Message)
	}
	return messages
}

// Occurrences are the messages of events, each as often as its event was
// recorded: the event recorder counts a repeat instead of adding an event.
func Occurrences(events []corev1.Event) []string {
	var messages []string
	for _, e := range events {
		for range max(int(e.Count), 1) {
			messages = append(messages, e.Message)
		}
	}
	return messages
}

// DrainEvents takes every event recorder holds now, without waiting.
func DrainEvents(recorder *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
