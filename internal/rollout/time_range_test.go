package rollout

import (
	"testing"
	"time"
)

func TestTimeInRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   time.Time
		add  time.Duration
		want bool
	}{
		{"a time of this century fits", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 0, true},
		{"the last second of year 9999 fits", MaxTime, 0, true},
		{"the first second of year 0 fits", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), 0, true},
		{"year 10000 does not fit", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), 0, false},
		{"a year before 0 does not fit", time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC), 0, false},
		{"a time that the soak takes past year 9999 does not fit", MaxTime.Add(-time.Hour), 2 * time.Hour, false},
		{"a soak that overflows does not fit", MaxTime.Add(-time.Hour), time.Duration(1<<63 - 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TimeInRange(tc.at, tc.add); got != tc.want {
				t.Errorf("TimeInRange(%s, %s) = %v, want %v", tc.at, tc.add, got, tc.want)
			}
		})
	}
}
