package profilesync

import (
	"crypto/sha256"
	"errors"
)

// failureDigest is the digest of failureCause(err); a refusal kept from an
// earlier sync (keptError) carries the digest of the cause it was made with.
func failureDigest(err error) [sha256.Size]byte {
	var kept *keptError
	if errors.As(err, &kept) {
		return kept.cause
	}
	return sha256.Sum256([]byte(failureCause(err)))
}

// failureCause is the message of the innermost error err wraps: "connect:
// connection refused" rather than the request that met it. An error that
// joins several is its own cause.
func failureCause(err error) string {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err.Error()
		}
		err = inner
	}
}
