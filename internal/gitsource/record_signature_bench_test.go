package gitsource

import (
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/storage/memory"
)

// BenchmarkVerifyRecordSignature is the cost a signed record adds to a
// decision: one record commit's SSH signature checked against its
// landscape's key (docs/performance.md).
func BenchmarkVerifyRecordSignature(b *testing.B) {
	for _, kind := range []string{"ed25519", "ecdsa"} {
		b.Run(kind, func(b *testing.B) {
			key := newTestRecordKey(b, kind)
			keys, err := ParseRecordKeys("bench", []byte(key.allowedSigners("dev")))
			if err != nil {
				b.Fatal(err)
			}
			repository, err := git.Init(memory.NewStorage(), nil)
			if err != nil {
				b.Fatal(err)
			}
			commit := signedRecordCommit(b, repository, appliedRecord("dev", strings.Repeat("ab", 20), time.Hour), key.signer)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if got := VerifyRecordSignature(commit, "dev", keys, recordTime); !got.Verified {
					b.Fatal(got.Describe())
				}
			}
		})
	}
}
