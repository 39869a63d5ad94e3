package receiver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// DefaultTokenTTL is how long a webhook token read from its Secret is used
// before the Secret is read again: a rotated token, a new Secret or a deleted
// one takes effect within it (and RefreshInterval). A Secret or
// token that is missing is remembered just as long.
const DefaultTokenTTL = 30 * time.Second

// tokenRetryDelay is how long a failed read of a Secret (anything but "not
// found": the API server is unreachable, the operator may not read it) is
// remembered before the Secret is read again.
const tokenRetryDelay = time.Second

// RefreshInterval is how often the receiver looks at the ProfileSyncs of the
// manager's cache for Secrets it has not read yet or whose outcome is older
// than the TTL: a new ProfileSync's hook works within it.
const RefreshInterval = time.Second

// maxTokens bounds the store. Only Secrets named by a ProfileSync's
// spec.webhook are ever read, so a cluster has no more entries than such
// ProfileSyncs; the bound holds even if it has very many.
const maxTokens = 4096

// readTimeout bounds one read of a Secret.
const readTimeout = 10 * time.Second

// tokenStore holds the webhook tokens of the Secrets that ProfileSyncs'
// spec.webhook names. It is filled off the request path (refresh, every
// RefreshInterval from Start): the ProfileSyncs it reads from the manager's
// cache, fed by its watch, say which Secrets to read, and each Secret is
// read with a get at most once per TTL. A request only looks a token up
// (lookup), so a request for a ProfileSync with a hook does the same work as
// one for a ProfileSync without one: no request ever reads a Secret.
//
// The operator may only get Secrets: a watch of Secrets would need list and
// watch of every Secret of the cluster, which RBAC cannot narrow to the few
// that hooks name, and would keep them all in memory.
type tokenStore struct {
	// secrets reads the Secrets (uncached: the operator may not watch them).
	secrets client.Reader
	// syncs lists the ProfileSyncs (the manager's cache).
	syncs client.Reader
	clock clock.PassiveClock
	ttl   time.Duration
	// limit bounds the entries (maxTokens).
	limit int
	// reads counts the Secret reads (Metrics); nil counts none.
	reads func()

	mu      sync.RWMutex
	entries map[types.NamespacedName]tokenEntry
}

// tokenEntry is the outcome of the last read of a Secret.
type tokenEntry struct {
	token []byte
	// err is why there is no token: wraps errNotFound for a missing Secret
	// or token, anything else for a read that failed.
	err error
	// due is when the Secret is read again.
	due time.Time
}

func newTokenStore(secrets, syncs client.Reader, c clock.PassiveClock, ttl time.Duration, reads func()) *tokenStore {
	return &tokenStore{secrets: secrets, syncs: syncs, clock: c, ttl: ttl, limit: maxTokens, reads: reads, entries: map[types.NamespacedName]tokenEntry{}}
}

// lookup is the token of the Secret key as last read. Every reason why there
// is none (not named by a ProfileSync, not read yet, no Secret, no token)
// wraps errNotFound; a read that failed, with no earlier outcome to keep,
// is returned as it failed.
func (s *tokenStore) lookup(key types.NamespacedName) ([]byte, error) {
	s.mu.RLock()
	entry, ok := s.entries[key]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: Secret %s is named by no ProfileSync's spec.webhook, or not read yet", errNotFound, key)
	}
	return entry.token, entry.err
}

// refresh reads every Secret that a ProfileSync's spec.webhook names and
// that was not read yet or is due, and forgets the Secrets no ProfileSync
// names any more.
func (s *tokenStore) refresh(ctx context.Context) error {
	wanted, err := s.wanted(ctx)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	var due []types.NamespacedName
	s.mu.Lock()
	for key := range s.entries {
		if !wanted[key] {
			delete(s.entries, key)
		}
	}
	for key := range wanted {
		if entry, ok := s.entries[key]; !ok || !now.Before(entry.due) {
			due = append(due, key)
		}
	}
	s.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].String() < due[j].String() })
	for _, key := range due {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.read(ctx, key)
	}
	return nil
}

// wanted are the Secrets the ProfileSyncs' spec.webhook names, at most limit
// of them (by namespace and name).
func (s *tokenStore) wanted(ctx context.Context) (map[types.NamespacedName]bool, error) {
	var syncs v1alpha1.ProfileSyncList
	if err := s.syncs.List(ctx, &syncs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list ProfileSyncs: %w", err)
	}
	var keys []types.NamespacedName
	seen := map[types.NamespacedName]bool{}
	for i := range syncs.Items {
		hook := syncs.Items[i].Spec.Webhook
		if hook == nil || hook.SecretRef.Name == "" {
			continue
		}
		key := types.NamespacedName{Namespace: syncs.Items[i].Namespace, Name: hook.SecretRef.Name}
		if !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	if len(keys) > s.limit {
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		ctrl.LoggerFrom(ctx).Info("more webhook Secrets than the receiver keeps: the hooks of the rest are refused",
			"secrets", len(keys), "kept", s.limit)
		keys = keys[:s.limit]
	}
	wanted := make(map[types.NamespacedName]bool, len(keys))
	for _, key := range keys {
		wanted[key] = true
	}
	return wanted, nil
}

// read reads the Secret key and stores the outcome. A failed read keeps an
// earlier outcome (a token, or its absence) and is tried again after
// tokenRetryDelay: an outage of the API server neither refuses a token that
// worked nor, after a rotation, accepts one longer than the outage.
func (s *tokenStore) read(ctx context.Context, key types.NamespacedName) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if s.reads != nil {
		s.reads()
	}
	token, err := readToken(ctx, s.secrets, key)
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && !errors.Is(err, errNotFound) {
		entry, ok := s.entries[key]
		if !ok {
			entry = tokenEntry{err: err}
		}
		entry.due = now.Add(min(s.ttl, tokenRetryDelay))
		s.entries[key] = entry
		return
	}
	s.entries[key] = tokenEntry{token: token, err: err, due: now.Add(s.ttl)}
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
