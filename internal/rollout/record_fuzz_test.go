package rollout

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzDecodeRecord feeds the record decoder arbitrary files, as anyone who
// can push to the repository can: it never panics, every refusal is a
// *RecordError naming the record, and a record it accepts is valid and
// writes out to a file that reads back the same.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(goodRecordFile()))
	f.Add([]byte(strings.Replace(strings.Replace(goodRecordFile(), `"applied"`, `"refused", "reason": "BuildFailed"`, 1), `"readyAt": "2026-03-01T12:01:30Z",`, ``, 1)))
	f.Add([]byte(strings.Replace(goodRecordFile(), `"applied"`, `"hotfix"`, 1)))
	f.Add([]byte(`{"version": 1, "version": 1}`))
	f.Add([]byte(`{"readyAt": null, "appliedAt": "9999-12-31T23:59:59.999999999+14:00"}`))
	f.Add([]byte(strings.Replace(goodRecordFile(), "2026-03-01T12:01:30Z", "9999-12-31T23:59:59-14:00", 1)))
	f.Add([]byte("[]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		record, err := DecodeRecord(recordSource, data)
		if err != nil {
			var recordErr *RecordError
			if !errors.As(err, &recordErr) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if !strings.HasPrefix(err.Error(), recordSource+": ") {
				t.Fatalf("an error that does not name the record: %q", err)
			}
			return
		}
		if err := record.Validate(); err != nil {
			t.Fatalf("an accepted record is invalid: %v", err)
		}
		written, err := EncodeRecord(record)
		if err != nil {
			t.Fatalf("an accepted record cannot be written: %v", err)
		}
		again, err := DecodeRecord(recordSource, written)
		if err != nil {
			t.Fatalf("an accepted record written out is refused: %v\n%s", err, written)
		}
		rewritten, err := EncodeRecord(again)
		if err != nil || !bytes.Equal(rewritten, written) {
			t.Fatalf("an accepted record reads back differently:\n%s\n%s", written, rewritten)
		}
	})
}
