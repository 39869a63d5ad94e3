package rollout

import "time"

// TimeInRange says whether at, and at plus add, fit what a status, JSON
// and the API server can hold: RFC 3339 years 0000 to 9999 (MaxTime). It
// is the one range check of every time read from Git: a record's times
// (timesInRange) and a commit's (gitsource.CommitTime). Git stores unix
// seconds, so a hostile commit or record can name any year; a time outside
// this range would make metav1.Time, and with it a whole status patch or a
// JSON report, fail to encode.
func TimeInRange(at time.Time, add time.Duration) bool {
	end := at.Add(add)
	return !at.After(MaxTime) && at.Year() >= 0 && !end.After(MaxTime) && !end.Before(at)
}
