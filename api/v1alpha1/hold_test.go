package v1alpha1

import (
	"strings"
	"testing"
	"time"
)

func TestParseHold(t *testing.T) {
	now := time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		annotations map[string]string
		maxHold     time.Duration
		want        *Hold
		wantErr     string
	}{
		{name: "no annotations"},
		{
			name:        "a reason without an expiry",
			annotations: map[string]string{HoldReasonAnnotation: "broken image"},
			wantErr:     "annotation profilesync.io/hold-reason is set without profilesync.io/hold-until, so nothing is held; set profilesync.io/hold-until to when the hold expires, in RFC 3339 (for example 2026-11-26T02:00:00Z), or remove profilesync.io/hold-reason",
		},
		{
			name:        "an empty reason without an expiry",
			annotations: map[string]string{HoldReasonAnnotation: ""},
			wantErr:     "annotation profilesync.io/hold-reason is set without profilesync.io/hold-until",
		},
		{
			name:        "a hold with a reason",
			annotations: map[string]string{HoldUntilAnnotation: "2026-11-26T02:00:00Z", HoldReasonAnnotation: "broken image"},
			want:        &Hold{Until: now.Add(24 * time.Hour), Reason: "broken image"},
		},
		{
			name:        "an offset is the same instant",
			annotations: map[string]string{HoldUntilAnnotation: "2026-11-26T03:00:00+01:00"},
			want:        &Hold{Until: now.Add(24 * time.Hour)},
		},
		{
			name:        "exactly the maximum",
			annotations: map[string]string{HoldUntilAnnotation: "2026-12-02T02:00:00Z"},
			want:        &Hold{Until: now.Add(DefaultMaxHold)},
		},
		{
			name:        "empty",
			annotations: map[string]string{HoldUntilAnnotation: ""},
			wantErr:     "annotation profilesync.io/hold-until: empty; a hold needs an expiry time in RFC 3339",
		},
		{
			name:        "not a time",
			annotations: map[string]string{HoldUntilAnnotation: "tomorrow"},
			wantErr:     `annotation profilesync.io/hold-until: "tomorrow" is not an RFC 3339 time`,
		},
		{
			name:        "a date without a time",
			annotations: map[string]string{HoldUntilAnnotation: "2026-11-26"},
			wantErr:     `"2026-11-26" is not an RFC 3339 time`,
		},
		{
			name:        "in the past",
			annotations: map[string]string{HoldUntilAnnotation: "2026-11-25T01:00:00Z"},
			wantErr:     "annotation profilesync.io/hold-until: 2026-11-25T01:00:00Z is not in the future",
		},
		{
			name:        "now is already over",
			annotations: map[string]string{HoldUntilAnnotation: "2026-11-25T02:00:00Z"},
			wantErr:     "is not in the future",
		},
		{
			name:        "beyond the default maximum",
			annotations: map[string]string{HoldUntilAnnotation: "2026-12-02T02:00:01Z"},
			wantErr:     "annotation profilesync.io/hold-until: 2026-12-02T02:00:01Z is more than 168h0m0s from now (the manager's --max-hold)",
		},
		{
			name:        "beyond a shorter maximum",
			annotations: map[string]string{HoldUntilAnnotation: "2026-11-25T04:00:00Z"},
			maxHold:     time.Hour,
			wantErr:     "is more than 1h0m0s from now",
		},
		{
			name:        "a reason too long",
			annotations: map[string]string{HoldUntilAnnotation: "2026-11-26T02:00:00Z", HoldReasonAnnotation: strings.Repeat("x", 1025)},
			wantErr:     "annotation profilesync.io/hold-reason: 1025 bytes, more than the 1024 allowed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHold(tt.annotations, now, tt.maxHold)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseHold() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseHold() error = %v", err)
			}
			switch {
			case tt.want == nil && got != nil:
				t.Fatalf("ParseHold() = %+v, want no hold", got)
			case tt.want != nil && (got == nil || !got.Until.Equal(tt.want.Until) || got.Reason != tt.want.Reason):
				t.Fatalf("ParseHold() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
