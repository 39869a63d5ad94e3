// Package sources reads the sources of new versions that the versions file
// declares (internal/propose): the tags of Git repositories, with go-git,
// and of OCI repositories, with go-containerregistry, each reading bounded
// (Limits) and every failure named by its source. It is the one package of
// the proposals that reaches the network; the engine stays pure.
package sources

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Limits bound what reading one source takes in.
type Limits struct {
	// MaxBytes is the most a source's responses may hold in all, in bytes.
	MaxBytes int64
	// MaxTags is the most tags a source may list.
	MaxTags int
	// Timeout bounds the whole reading of one source.
	Timeout time.Duration
}

// Default limits: the tags of kubernetes/kubernetes (about 1,500 tags, a
// few hundred KiB of ref advertisement, and the tag and commit objects of
// the tags that are versions) fit many times over.
const (
	DefaultMaxSourceBytes int64 = 64 << 20
	DefaultMaxTags              = 20000
	DefaultSourceTimeout        = 2 * time.Minute
)

// DefaultLimits are the limits of a source unless raised.
func DefaultLimits() Limits {
	return Limits{MaxBytes: DefaultMaxSourceBytes, MaxTags: DefaultMaxTags, Timeout: DefaultSourceTimeout}
}

// ErrSourceLimit is matched (errors.Is) by a source refused for going past
// one of its limits.
var ErrSourceLimit = errors.New("source limit exceeded")

// byteBudget is the bytes one source's reading may still take in; every
// response body (http) and every connection (ssh) of the source draws on it.
type byteBudget struct {
	max    int64
	remain atomic.Int64
}

func newByteBudget(max int64) *byteBudget {
	b := &byteBudget{max: max}
	b.remain.Store(max)
	return b
}

// take draws n bytes read, failing once the budget is spent.
func (b *byteBudget) take(n int) error {
	if b.remain.Add(-int64(n)) < 0 {
		return fmt.Errorf("%w: the responses hold more than %d bytes", ErrSourceLimit, b.max)
	}
	return nil
}

// spent is the budget's error once a read went past it, else nil. A reader
// that failed because its connection was closed under it (the ssh client's
// reads run in a goroutine of their own) reports this instead.
func (b *byteBudget) spent() error {
	if b.remain.Load() < 0 {
		return fmt.Errorf("%w: the responses hold more than %d bytes", ErrSourceLimit, b.max)
	}
	return nil
}

// boundedTransport counts the bytes of every response body read through it
// against one budget, and fails a read that would go past it, so that a
// source cannot make the reader hold more than Limits.MaxBytes.
type boundedTransport struct {
	base   http.RoundTripper
	budget *byteBudget
}

func newBoundedTransport(base http.RoundTripper, budget *byteBudget) *boundedTransport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &boundedTransport{base: base, budget: budget}
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &boundedBody{body: resp.Body, budget: t.budget}
	return resp, nil
}

type boundedBody struct {
	body   io.ReadCloser
	budget *byteBudget
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if budgetErr := b.budget.take(n); budgetErr != nil {
		return 0, budgetErr
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }

// boundedConn is a connection whose reads draw on a budget: an ssh
// source's every byte, handshake included.
type boundedConn struct {
	net.Conn
	budget *byteBudget
}

func (c *boundedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if budgetErr := c.budget.take(n); budgetErr != nil {
		return 0, budgetErr
	}
	return n, err
}
