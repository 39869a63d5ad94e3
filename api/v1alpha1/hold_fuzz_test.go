package v1alpha1

import (
	"strings"
	"testing"
	"time"
)

// lastRFC3339Second is the last instant RFC 3339 can write (9999-12-31T23:59:59Z):
// the fuzzed "now" stays between it and the Unix epoch, where the clock of a
// manager can be.
const lastRFC3339Second = 253402300799

// FuzzParseHold feeds ParseHold any annotation values, as anyone with the
// verb hold can write them, at any now and under any --max-hold: it never
// panics, every refusal names a hold annotation, it holds nothing only when
// neither annotation is set, and a hold it accepts expires after now and
// at most the maximum (DefaultMaxHold when not positive) after it, with the
// reason as written.
func FuzzParseHold(f *testing.F) {
	const now = int64(1795572000) // 2026-11-25T02:00:00Z
	f.Add("2026-11-26T02:00:00Z", "INC-4711: broken image", true, true, now, int64(0), int64(0))
	f.Add("2026-11-26T03:00:00+01:00", "", true, false, now, int64(0), int64(time.Hour))
	f.Add("2026-12-02T02:00:00Z", "", true, false, now, int64(0), int64(0))
	f.Add("2026-12-02T02:00:00.000000001Z", "", true, false, now, int64(999999999), int64(0))
	f.Add("", "", true, false, now, int64(0), int64(0))
	f.Add("tomorrow", "why", true, true, now, int64(0), int64(-1))
	f.Add("", "only a reason", false, true, now, int64(0), int64(0))
	f.Add("9999-12-31T23:59:59Z", "", true, false, int64(0), int64(0), int64(1<<63-1))
	f.Add("0000-01-01T00:00:00Z", strings.Repeat("x", 1025), true, true, now, int64(0), int64(0))
	f.Fuzz(func(t *testing.T, until, reason string, setUntil, setReason bool, nowSeconds, nowNanos, maxHold int64) {
		if nowSeconds < 0 {
			nowSeconds = -(nowSeconds + 1)
		}
		if nowNanos < 0 {
			nowNanos = -(nowNanos + 1)
		}
		now := time.Unix(nowSeconds%(lastRFC3339Second+1), nowNanos%int64(time.Second))
		annotations := map[string]string{}
		if setUntil {
			annotations[HoldUntilAnnotation] = until
		}
		if setReason {
			annotations[HoldReasonAnnotation] = reason
		}
		hold, err := ParseHold(annotations, now, time.Duration(maxHold))
		if err != nil {
			if hold != nil {
				t.Fatalf("a hold and an error: %+v, %v", hold, err)
			}
			if !strings.HasPrefix(err.Error(), "annotation "+HoldUntilAnnotation) && !strings.HasPrefix(err.Error(), "annotation "+HoldReasonAnnotation) {
				t.Fatalf("a refusal that names no hold annotation: %q", err)
			}
			return
		}
		if hold == nil {
			if setUntil || setReason {
				t.Fatalf("annotations %q hold nothing and are not refused", annotations)
			}
			return
		}
		if !setUntil {
			t.Fatalf("a hold without %s: %+v", HoldUntilAnnotation, hold)
		}
		bound := time.Duration(maxHold)
		if bound <= 0 {
			bound = DefaultMaxHold
		}
		if !hold.Until.After(now) {
			t.Fatalf("hold-until %q at now %s: accepted a hold that has expired (%s)", until, now.Format(time.RFC3339Nano), hold.Until)
		}
		if hold.Until.After(now.Add(bound)) {
			t.Fatalf("hold-until %q at now %s: accepted a hold longer than %s (until %s)", until, now.Format(time.RFC3339Nano), bound, hold.Until)
		}
		if hold.Reason != reason && setReason || hold.Reason != "" && !setReason {
			t.Fatalf("reason %q, want %q", hold.Reason, annotations[HoldReasonAnnotation])
		}
	})
}
