package receiver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// +kubebuilder:rbac:groups=core.profilesync.io,resources=profilesyncs,verbs=patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// triggerTimeout bounds the hand-over of one sync to the controller: the
// controller drains Trigger as soon as it runs, so the bound only matters
// while it starts.
const triggerTimeout = 10 * time.Second

// Webhook request headers. Each proves that the sender knows the token of
// the ProfileSync's spec.webhook.secretRef.
const (
	// GitHubSignatureHeader is GitHub's "sha256=<hex>": HMAC-SHA256 of the
	// body keyed with the token.
	GitHubSignatureHeader = "X-Hub-Signature-256"
	// GitLabTokenHeader is GitLab's secret token, sent as it is.
	GitLabTokenHeader = "X-Gitlab-Token"
	// SignatureHeader is the generic header for any other sender, in
	// GitHub's format: "sha256=<hex>", HMAC-SHA256 of the body keyed with
	// the token.
	SignatureHeader = "X-Signature"
)

// TokenKey is the key of the webhook Secret that holds the token.
const TokenKey = "token"

// PathPrefix is the path under which the receiver serves; a
// ProfileSync's hook is PathPrefix + "<namespace>/<name>".
const PathPrefix = "/hook/"

// DefaultMaxBodyBytes bounds the body of a webhook request; GitHub
// caps its payloads at 25 MB, but a push of a profiles repository is a few KiB.
const DefaultMaxBodyBytes = 1 << 20

// Receiver is the HTTP server behind --receiver-addr: the package doc says
// what it answers and what a request can cost.
//
// It runs on every replica (NeedLeaderElection is false), so a Service may
// route the Git host's request to any pod. On the leader it hands the
// ProfileSync straight to the controller's queue through Trigger; on the
// other replicas, whose controllers do not run, it sets the reconcile request
// annotation (reconcile.fluxcd.io/requestedAt) on the ProfileSync, which the
// leader's controller watches. Either way the sync starts at once, unless the
// trigger spacing holds it back.
type Receiver struct {
	// Addr is the TCP address to listen on, for example ":9292".
	Addr string
	// Client reads ProfileSyncs (the manager's cached client) and, on a
	// replica that is not the leader, patches their reconcile annotation.
	Client client.Client
	// SecretReader reads the webhook Secrets. It should be uncached (the
	// manager's API reader): the operator may only get Secrets, not watch
	// them all. The receiver reads them off the request path, once per
	// TokenTTL each, and keeps what it read (tokenStore).
	SecretReader client.Reader
	// Trigger is the channel of the ProfileSync controller's Trigger.
	Trigger chan<- event.GenericEvent
	// Elected is closed when this replica leads (the manager's Elected());
	// nil means it always leads.
	Elected <-chan struct{}
	// MaxBodyBytes bounds request bodies; DefaultMaxBodyBytes when 0.
	MaxBodyBytes int64
	// TokenTTL is how long a token read from a Secret is used;
	// DefaultTokenTTL when 0.
	TokenTTL time.Duration
	// TriggerSpacing is the least time between two triggers of one
	// ProfileSync; DefaultTriggerSpacing when 0.
	TriggerSpacing time.Duration
	// Clock times the token store and the trigger spacing; the real clock
	// when nil.
	Clock clock.WithDelayedExecution
	// Metrics, when set, counts the requests and the Secret reads.
	Metrics *Metrics

	setupOnce sync.Once
	tokens    *tokenStore
	pacer     *pacer

	mu       sync.Mutex
	listener net.Listener
	// baseCtx is the context of deferred triggers: Start's, once it runs.
	baseCtx context.Context
}

// setup makes the token store and the pacer from the settings.
func (r *Receiver) setup() {
	r.setupOnce.Do(func() {
		if r.Clock == nil {
			r.Clock = clock.RealClock{}
		}
		ttl := r.TokenTTL
		if ttl <= 0 {
			ttl = DefaultTokenTTL
		}
		spacing := r.TriggerSpacing
		if spacing <= 0 {
			spacing = DefaultTriggerSpacing
		}
		r.tokens = newTokenStore(r.SecretReader, r.Client, r.Clock, ttl, r.Metrics.secretRead)
		r.pacer = newPacer(r.Clock, spacing, r.triggerDeferred)
	})
}

// NeedLeaderElection is false: every replica receives hooks (see
// Receiver).
func (r *Receiver) NeedLeaderElection() bool { return false }

// Listen binds Addr, so that a taken port fails at start-up, before the
// manager runs. Start calls it when it was not called before.
func (r *Receiver) Listen() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.listener != nil {
		return nil
	}
	l, err := net.Listen("tcp", r.Addr)
	if err != nil {
		return fmt.Errorf("push receiver: listen on %s: %w", r.Addr, err)
	}
	r.listener = l
	return nil
}

// ListenAddr is the address the receiver listens on, nil before Listen.
func (r *Receiver) ListenAddr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.listener == nil {
		return nil
	}
	return r.listener.Addr()
}

// Start serves until ctx is done, then shuts down gracefully.
func (r *Receiver) Start(ctx context.Context) error {
	if err := r.Listen(); err != nil {
		return err
	}
	r.setup()
	r.mu.Lock()
	r.baseCtx = ctx
	r.mu.Unlock()
	defer r.pacer.stop()
	refreshCtx, stopRefresh := context.WithCancel(ctx)
	firstRefresh, refreshed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(refreshed)
		r.refreshTokens(refreshCtx)
		close(firstRefresh)
		r.keepTokensFresh(refreshCtx)
	}()
	defer func() {
		stopRefresh()
		<-refreshed
	}()
	// The tokens are read before the first request is served, so a push
	// that arrives at start-up is not refused for want of them; but an API
	// server that answers slowly delays serving by one read's time at most.
	waited := r.Clock.NewTimer(readTimeout)
	select {
	case <-firstRefresh:
	case <-waited.C():
	case <-ctx.Done():
	}
	waited.Stop()
	server := &http.Server{
		Handler:           r,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	served := make(chan error, 1)
	go func() { served <- server.Serve(r.listener) }()
	ctrl.LoggerFrom(ctx).WithName("webhook-receiver").Info("serving webhooks", "address", r.listener.Addr().String())
	select {
	case err := <-served:
		return fmt.Errorf("push receiver: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("push receiver: shut down: %w", err)
	}
	return nil
}

// refreshTokens reads the webhook Secrets that are new or due
// (tokenStore.refresh); a failure is logged, and the next refresh tries
// again.
func (r *Receiver) refreshTokens(ctx context.Context) {
	r.setup()
	if err := r.tokens.refresh(ctx); err != nil && ctx.Err() == nil {
		ctrl.LoggerFrom(ctx).WithName("webhook-receiver").Error(err, "refresh the webhook tokens")
	}
}

// keepTokensFresh refreshes the tokens every RefreshInterval until ctx is
// done.
func (r *Receiver) keepTokensFresh(ctx context.Context) {
	for {
		timer := r.Clock.NewTimer(RefreshInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
		r.refreshTokens(ctx)
	}
}

// errNotFound is any reason why a request cannot prove a token: no such
// ProfileSync, no spec.webhook, no Secret, no token. The log says which.
var errNotFound = errors.New("not found")

// decoyToken is what a request for a ProfileSync without a token is checked
// against, so that it takes as long as one with a token. The outcome is
// ignored: such a request is always refused.
var decoyToken = []byte("profilesync-receiver-decoy-token")

// ServeHTTP handles one hook.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.setup()
	log := ctrl.Log.WithName("webhook-receiver")
	key, ok := hookKey(req.URL.Path)
	if !ok {
		r.refuse(w)
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		r.reject(w, http.StatusMethodNotAllowed)
		return
	}
	limit := r.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			r.reject(w, http.StatusRequestEntityTooLarge)
			return
		}
		r.reject(w, http.StatusBadRequest)
		return
	}

	ctx := req.Context()
	token, err := r.token(ctx, key)
	if err != nil {
		if errors.Is(err, errNotFound) {
			_ = verifyHook(req.Header, body, decoyToken)
			log.V(1).Info("hook refused", "profileSync", key.String(), "reason", err.Error())
			r.refuse(w)
			return
		}
		log.Error(err, "hook failed", "profileSync", key.String())
		r.fail(w)
		return
	}
	if !verifyHook(req.Header, body, token) {
		log.V(1).Info("hook refused", "profileSync", key.String(), "reason", "no signature that verifies")
		r.refuse(w)
		return
	}
	switch pace, at := r.pacer.admit(key); pace {
	case paceNow:
		if err := r.trigger(ctx, key); err != nil {
			r.pacer.undo(key, at)
			log.Error(err, "trigger sync", "profileSync", key.String())
			r.fail(w)
			return
		}
		log.V(1).Info("sync triggered", "profileSync", key.String())
		r.Metrics.request(resultTriggered)
	case paceDeferred:
		log.V(1).Info("sync deferred to the end of the trigger spacing", "profileSync", key.String())
		r.Metrics.request(resultDeferred)
	case paceCoalesced:
		log.V(1).Info("hook dropped: a deferred sync is pending already", "profileSync", key.String())
		r.Metrics.request(resultCoalesced)
	}
	respond(w, http.StatusAccepted)
}

// refuse answers a request that did not prove the token of a ProfileSync,
// whatever the reason, with one answer (see the package doc).
func (r *Receiver) refuse(w http.ResponseWriter) {
	r.Metrics.request(resultRefused)
	respond(w, http.StatusNotFound)
}

// reject answers a request that is not a hook whatever its target.
func (r *Receiver) reject(w http.ResponseWriter, status int) {
	r.Metrics.request(resultRejected)
	respond(w, status)
}

// fail answers a request the receiver could not handle.
func (r *Receiver) fail(w http.ResponseWriter) {
	r.Metrics.request(resultFailed)
	respond(w, http.StatusServiceUnavailable)
}

// respond writes status with only its standard text: never a reason.
func respond(w http.ResponseWriter, status int) {
	http.Error(w, http.StatusText(status), status)
}

// hookKey parses /hook/<namespace>/<name>; both must be DNS-1123 names.
func hookKey(path string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(path, PathPrefix)
	if !ok {
		return types.NamespacedName{}, false
	}
	namespace, name, ok := strings.Cut(rest, "/")
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: namespace, Name: name}, true
}

// token is the webhook token of the ProfileSync key: the ProfileSync from the
// manager's cache, the token from the token store. Every reason why there is
// none wraps errNotFound. It does the same work whether or not the
// ProfileSync exists or has a hook: one read of the cache and one look-up in
// the store, never a read of a Secret, so the time of the answer does not
// tell them apart.
func (r *Receiver) token(ctx context.Context, key types.NamespacedName) ([]byte, error) {
	var obj v1alpha1.ProfileSync
	getErr := r.Client.Get(ctx, key, &obj)
	if getErr != nil && !apierrors.IsNotFound(getErr) {
		return nil, fmt.Errorf("get ProfileSync: %w", getErr)
	}
	secret := types.NamespacedName{Namespace: key.Namespace}
	if getErr == nil && obj.Spec.Webhook != nil {
		secret.Name = obj.Spec.Webhook.SecretRef.Name
	}
	token, err := r.tokens.lookup(secret)
	switch {
	case getErr != nil:
		return nil, fmt.Errorf("%w: no such ProfileSync", errNotFound)
	case secret.Name == "":
		return nil, fmt.Errorf("%w: spec.webhook is not set", errNotFound)
	}
	return token, err
}

// verifyHook says whether the request proves knowledge of token: at least
// one recognised header is present and every present one verifies. Every
// comparison takes the same time whatever the values.
func verifyHook(header http.Header, body, token []byte) bool {
	present := 0
	for _, name := range []string{GitHubSignatureHeader, SignatureHeader} {
		value := header.Get(name)
		if value == "" {
			continue
		}
		present++
		if !verifyHMAC(value, body, token) {
			return false
		}
	}
	if value := header.Get(GitLabTokenHeader); value != "" {
		present++
		// Compare digests, so the comparison does not stop early on a
		// length difference and leak the token's length.
		got, want := sha256.Sum256([]byte(value)), sha256.Sum256(token)
		if !hmac.Equal(got[:], want[:]) {
			return false
		}
	}
	return present > 0
}

// verifyHMAC checks a "sha256=<hex>" signature of body.
func verifyHMAC(value string, body, token []byte) bool {
	hexSum, ok := strings.CutPrefix(value, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, token)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// trigger starts a sync of key: through the controller's queue on the
// leader, through the reconcile request annotation elsewhere.
func (r *Receiver) trigger(ctx context.Context, key types.NamespacedName) error {
	if r.Trigger != nil && r.leads() {
		obj := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		timer := r.Clock.NewTimer(triggerTimeout)
		defer timer.Stop()
		select {
		case r.Trigger <- event.GenericEvent{Object: obj}:
			return nil
		case <-timer.C():
			return errors.New("queue sync: the controller does not take requests")
		case <-ctx.Done():
			return fmt.Errorf("queue sync: %w", ctx.Err())
		}
	}
	obj := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`,
		meta.ReconcileRequestAnnotation, r.Clock.Now().UTC().Format(time.RFC3339Nano)))
	if err := r.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("request reconcile: %w", err)
	}
	return nil
}

// triggerDeferred triggers the sync the pacer deferred; no one waits for its
// answer, so a failure is only logged.
func (r *Receiver) triggerDeferred(key types.NamespacedName) {
	r.mu.Lock()
	ctx := r.baseCtx
	r.mu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, triggerTimeout)
	defer cancel()
	if err := r.trigger(ctx, key); err != nil {
		ctrl.Log.WithName("webhook-receiver").Error(err, "trigger deferred sync", "profileSync", key.String())
		return
	}
	ctrl.Log.WithName("webhook-receiver").V(1).Info("deferred sync triggered", "profileSync", key.String())
}

func (r *Receiver) leads() bool {
	if r.Elected == nil {
		return true
	}
	select {
	case <-r.Elected:
		return true
	default:
		return false
	}
}
