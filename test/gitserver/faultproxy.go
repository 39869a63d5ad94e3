package gitserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// FaultMode says how a FaultProxy treats the connections and requests it
// receives.
type FaultMode int

const (
	// Pass forwards every request to the server unchanged.
	Pass FaultMode = iota
	// Down closes the port and every open connection: clients get
	// "connection refused", as from a host whose Git server is stopped.
	Down
	// Hang accepts connections and reads requests but never answers, as a
	// server behind a stuck load balancer does; a request ends only when
	// its client gives up (or the proxy closes).
	Hang
	// HangPack answers the ref advertisement (GET .../info/refs) but never
	// a POST .../git-upload-pack, which transfers the pack: a server that
	// stalls once the transfer begins.
	HangPack
	// TruncatePack forwards the ref listing but cuts every pack response
	// (POST .../git-upload-pack) short in the middle of the pack and drops
	// the connection, as a reset connection does.
	TruncatePack
	// CorruptPack forwards the ref listing but changes one byte inside the
	// pack of every pack response; the response is otherwise complete.
	CorruptPack
)

func (m FaultMode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Down:
		return "down"
	case Hang:
		return "hang"
	case HangPack:
		return "hang-pack"
	case TruncatePack:
		return "truncate-pack"
	case CorruptPack:
		return "corrupt-pack"
	default:
		return fmt.Sprintf("FaultMode(%d)", int(m))
	}
}

// FaultProxy is an HTTP reverse proxy in front of a Server whose faults a
// test switches at run time. The clients' URL (the proxy's) stays the same
// across modes, so a client configured once sees the same repository go
// down, hang, serve broken packs and come back. Its methods are safe for
// concurrent use.
type FaultProxy struct {
	address string
	proxy   *httputil.ReverseProxy

	mu   sync.Mutex
	mode FaultMode
	// server serves the port while the mode is not Down; nil while Down.
	server *http.Server
	served chan error
	closed bool
	// hung is closed to release the requests Hang holds, when the proxy
	// closes.
	hung chan struct{}

	counts struct {
		sync.Mutex
		byMode map[FaultMode]int
	}
}

// NewFaultProxy starts a proxy for target (a Server's URL) on a free
// loopback port, in mode Pass. Close it when done.
func NewFaultProxy(target string) (*FaultProxy, error) {
	targetURL, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("parse proxy target %q: %w", target, err)
	}
	p := &FaultProxy{
		address: "127.0.0.1:0",
		proxy:   httputil.NewSingleHostReverseProxy(targetURL),
		hung:    make(chan struct{}),
	}
	p.counts.byMode = map[FaultMode]int{}
	p.proxy.ModifyResponse = p.breakPack
	// The standard logger would print every aborted response of a
	// truncated pack; the test sees them as client errors.
	p.proxy.ErrorLog = log.New(io.Discard, "", 0)
	p.proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.listenLocked(); err != nil {
		return nil, err
	}
	// The next listen (after Down) must take the same port.
	p.address = p.server.Addr
	return p, nil
}

// URL is the proxy's base URL, without a trailing slash. It stays the same
// in every mode.
func (p *FaultProxy) URL() string {
	return "http://" + p.address
}

// RepoURL is the clone URL of the named repository through the proxy.
func (p *FaultProxy) RepoURL(name string) string {
	return p.URL() + "/" + name + ".git"
}

// Mode is the current mode.
func (p *FaultProxy) Mode() FaultMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Requests says how many requests reached the proxy in each mode (none
// reach it while Down).
func (p *FaultProxy) Requests(mode FaultMode) int {
	p.counts.Lock()
	defer p.counts.Unlock()
	return p.counts.byMode[mode]
}

// SetMode switches the proxy to mode. Leaving Down listens on the same
// port again; entering Down closes the port and drops every connection,
// idle keep-alive connections included.
func (p *FaultProxy) SetMode(mode FaultMode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("fault proxy: closed")
	}
	switch {
	case mode == Down && p.server != nil:
		if err := p.stopLocked(); err != nil {
			return err
		}
	case mode != Down && p.server == nil:
		if err := p.listenLocked(); err != nil {
			return err
		}
	}
	p.mode = mode
	return nil
}

// Close stops the proxy and releases hung requests. Closing again is a
// no-op.
func (p *FaultProxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	close(p.hung)
	if p.server == nil {
		return nil
	}
	return p.stopLocked()
}

func (p *FaultProxy) listenLocked() error {
	// The port was free a moment ago and only this proxy uses it; a
	// freshly closed listening socket can be bound again at once (Go sets
	// SO_REUSEADDR), so a retry loop covers only a slow close.
	var listener net.Listener
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		listener, err = net.Listen("tcp", p.address)
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("fault proxy: listen on %s: %w", p.address, err)
	}
	server := &http.Server{
		Addr:              listener.Addr().String(),
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	p.server, p.served = server, served
	return nil
}

func (p *FaultProxy) stopLocked() error {
	// Close, not Shutdown: a stopped host drops connections, it does not
	// drain them; hung handlers see their request's context end.
	err := p.server.Close()
	if serveErr := <-p.served; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	p.server, p.served = nil, nil
	if err != nil {
		return fmt.Errorf("fault proxy: stop: %w", err)
	}
	return nil
}

func (p *FaultProxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	mode := p.Mode()
	p.counts.Lock()
	p.counts.byMode[mode]++
	p.counts.Unlock()
	if mode == Hang || mode == HangPack && isPackRequest(r) {
		select {
		case <-r.Context().Done():
		case <-p.hung:
		}
		// Answering nothing: dropping the connection is all a hung server
		// ever "says".
		panic(http.ErrAbortHandler)
	}
	p.proxy.ServeHTTP(w, r.WithContext(withMode(r.Context(), mode)))
}

// breakPack replaces the body of a pack response according to the mode
// the request was received in.
func (p *FaultProxy) breakPack(resp *http.Response) error {
	mode := modeOf(resp.Request.Context())
	if (mode != TruncatePack && mode != CorruptPack) || !isPackRequest(resp.Request) {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return fmt.Errorf("fault proxy: read pack response: %w", err)
	}
	start := bytes.Index(body, []byte("PACK"))
	if start < 0 {
		// No pack (for example an error from the server): nothing to break.
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	}
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	// The middle of what follows the pack's signature lies in object data
	// for any pack, however small.
	middle := start + (len(body)-start)/2
	if mode == TruncatePack {
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:middle]), errorReader{io.ErrUnexpectedEOF}))
		return nil
	}
	corrupted := bytes.Clone(body)
	corrupted[middle] ^= 0xff
	resp.Body = io.NopCloser(bytes.NewReader(corrupted))
	return nil
}

// errorReader fails every read, so the reverse proxy aborts the response
// and drops the connection, without the end of the chunked body.
type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }

// modeKey carries the mode a request was received in to the response
// handling, so a mode switch in between does not change what one response
// gets.
type modeKey struct{}

func withMode(ctx context.Context, mode FaultMode) context.Context {
	return context.WithValue(ctx, modeKey{}, mode)
}

func modeOf(ctx context.Context) FaultMode {
	mode, _ := ctx.Value(modeKey{}).(FaultMode)
	return mode
}

// isPackRequest says whether r asks for objects (or, in Git's protocol v2,
// lists refs: those responses hold no pack and pass unchanged).
func isPackRequest(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack")
}
