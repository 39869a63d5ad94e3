// Package receiver is the push receiver: an HTTP server that starts the sync
// of a ProfileSync as soon as its Git host posts a push webhook, instead of at
// the next spec.interval. The host posts to PathPrefix + "<namespace>/<name>",
// and the request must prove that it knows the token of the Secret named by
// the ProfileSync's spec.webhook.secretRef (GitHubSignatureHeader,
// GitLabTokenHeader or SignatureHeader). The body is only verified, never
// interpreted: an accepted request syncs spec.ref.
//
// # Answers
//
// An answer carries nothing but its status text:
//   - 202 Accepted: the token was proved; a sync is triggered, now or at the
//     end of the trigger spacing (below).
//   - 404 Not Found: the request did not prove the token of a ProfileSync.
//     This one answer covers a path that is not a hook, no such ProfileSync,
//     one without spec.webhook, a missing Secret or token, a request without
//     a signature and a signature that does not verify, so a caller without
//     the token cannot tell which ProfileSyncs exist or have a hook. A request
//     for a ProfileSync without a token is checked against a decoy token, so
//     it takes as long as any other.
//   - 405 Method Not Allowed (not a POST), 413 Request Entity Too Large (a
//     body over MaxBodyBytes), 400 Bad Request (a body cut off): decided
//     before the target is looked up, so the same for every target.
//   - 503 Service Unavailable: the API server could not be read or the sync
//     could not be handed over; the Git host may retry. A failed read of a
//     webhook Secret is the one answer that tells a hook exists, and only
//     while the API server fails.
//
// # What a request costs
//
// A request costs no request to the API server, with the token or without,
// and a request for a ProfileSync with a hook does the same work as one for
// a ProfileSync without one or for none at all: one read of the manager's
// cache, one look-up of a token in memory, one HMAC (against a decoy token
// when there is none), so the time of the answer does not tell them apart.
// The tokens are read off the request path (tokenStore): every
// RefreshInterval (1 s) the receiver looks at the ProfileSyncs of the
// manager's cache, fed by its watch, and gets each Secret a spec.webhook
// names that it has not read yet or read more than TokenTTL
// (DefaultTokenTTL, 30 s) ago. A missing Secret or token is remembered just
// as long; a failed read is retried after a second and keeps the outcome
// before it. So a new hook works within a second, and a rotated token takes
// effect within TokenTTL: until then the old token is accepted and the new
// one refused. Only Secrets that a ProfileSync names are read, the store
// holds at most a few thousand, and the operator needs no more than get on
// Secrets: a watch of Secrets would need list and watch of every Secret of
// the cluster, which RBAC cannot narrow to the ones hooks name.
//
// A request with the token (a push, or a replay of a captured one: a
// signature has no time in it) triggers syncs of its ProfileSync spaced by
// TriggerSpacing (DefaultTriggerSpacing, 1 s). The first request starts a
// sync at once; one within the spacing of the last trigger is folded into one
// trigger at the end of the spacing; while that trigger is pending, further
// requests are dropped (counted as "coalesced" in Metrics). A burst or a
// replay therefore leaves at most one sync pending and starts at most one
// sync, one listing of the Git host's refs, per spacing; a push waits at most
// one spacing and is never lost, because the deferred sync starts after it.
// The spacing holds for both ways a sync is triggered: the leader's Trigger
// channel and, on a replica that does not lead, the patch of the reconcile
// request annotation, which is a write to the API server. It is kept per
// replica.
package receiver
