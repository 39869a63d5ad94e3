package receiver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultTokenTTL is how long a webhook token read from its Secret is used
// before the Secret is read again: a rotated token, a new Secret or a deleted
// one takes effect within it. A Secret or token that is missing is
// remembered just as long.
const DefaultTokenTTL = 30 * time.Second

// tokenRetryDelay is how long a failed read of a Secret (anything but "not
// found": the API server is unreachable, the operator may not read it) is
// remembered, so that an outage does not turn every request into a read
// either.
const tokenRetryDelay = time.Second

// maxTokens bounds the cache. Only Secrets named by a ProfileSync's
// spec.webhook are ever read, so a cluster has no more entries than such
// ProfileSyncs; the bound holds even if it has very many.
const maxTokens = 4096

// readTimeout bounds one read of a Secret. The read does not follow the
// request's context: a caller that hangs up must not make the read fail,
// which would be remembered for tokenRetryDelay.
const readTimeout = 10 * time.Second

// tokenCache reads webhook tokens from their Secrets at most once per TTL
// each, whatever the number of requests: concurrent requests for a Secret
// that is not cached wait for one read.
type tokenCache struct {
	reader client.Reader
	clock  clock.PassiveClock
	ttl    time.Duration
	// reads counts the Secret reads (Metrics); nil counts none.
	reads func()

	mu      sync.Mutex
	entries map[types.NamespacedName]*tokenEntry
}

// tokenEntry is the outcome of one read of a Secret; done is closed once it
// is known.
type tokenEntry struct {
	done    chan struct{}
	token   []byte
	err     error
	expires time.Time
}

func newTokenCache(reader client.Reader, c clock.PassiveClock, ttl time.Duration, reads func()) *tokenCache {
	return &tokenCache{reader: reader, clock: c, ttl: ttl, reads: reads, entries: map[types.NamespacedName]*tokenEntry{}}
}

// token is the token of the Secret key. Every reason why there is none
// (no Secret, no token in it) wraps errNotFound.
func (c *tokenCache) token(ctx context.Context, key types.NamespacedName) ([]byte, error) {
	c.mu.Lock()
	now := c.clock.Now()
	entry := c.entries[key]
	if entry == nil || entry.expired(now) {
		entry = &tokenEntry{done: make(chan struct{})}
		c.makeRoom(now)
		c.entries[key] = entry
		c.mu.Unlock()
		c.read(ctx, key, entry)
	} else {
		c.mu.Unlock()
	}
	select {
	case <-entry.done:
		return entry.token, entry.err
	case <-ctx.Done():
		return nil, fmt.Errorf("read Secret %s: %w", key, ctx.Err())
	}
}

// read fills entry from the Secret key and marks it done.
func (c *tokenCache) read(ctx context.Context, key types.NamespacedName, entry *tokenEntry) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	if c.reads != nil {
		c.reads()
	}
	token, err := readToken(ctx, c.reader, key)
	ttl := c.ttl
	if err != nil && !errors.Is(err, errNotFound) {
		ttl = min(ttl, tokenRetryDelay)
	}
	c.mu.Lock()
	entry.token, entry.err, entry.expires = token, err, c.clock.Now().Add(ttl)
	c.mu.Unlock()
	close(entry.done)
}

// expired says whether the entry's read is over and its outcome too old.
// c.mu is held.
func (e *tokenEntry) expired(now time.Time) bool {
	select {
	case <-e.done:
		return !now.Before(e.expires)
	default:
		return false
	}
}

// makeRoom drops expired entries when the cache is full, and then, if it is
// still full, the entry that expires first. c.mu is held.
func (c *tokenCache) makeRoom(now time.Time) {
	if len(c.entries) < maxTokens {
		return
	}
	var oldest types.NamespacedName
	var oldestExpires time.Time
	for key, entry := range c.entries {
		if entry.expired(now) {
			delete(c.entries, key)
			continue
		}
		select {
		case <-entry.done:
			if oldestExpires.IsZero() || entry.expires.Before(oldestExpires) {
				oldest, oldestExpires = key, entry.expires
			}
		default:
		}
	}
	if len(c.entries) >= maxTokens && !oldestExpires.IsZero() {
		delete(c.entries, oldest)
	}
}

// readToken reads the token of the Secret key from the API server.
func readToken(ctx context.Context, reader client.Reader, key types.NamespacedName) ([]byte, error) {
	var secret corev1.Secret
	if err := reader.Get(ctx, key, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Secret %s of spec.webhook.secretRef does not exist", errNotFound, key)
		}
		return nil, fmt.Errorf("get Secret %s: %w", key, err)
	}
	token := secret.Data[TokenKey]
	if len(token) == 0 {
		// An empty key would let anyone sign.
		return nil, fmt.Errorf("%w: Secret %s has no %q", errNotFound, key, TokenKey)
	}
	return token, nil
}
