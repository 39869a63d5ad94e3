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

// boundedTransport counts the bytes of every response body read through it
// against one budget, and fails a read that would go past it, so that a
// source cannot make the reader hold more than Limits.MaxBytes.
type boundedTransport struct {
	base   http.RoundTripper
	max    int64
	remain *atomic.Int64
}

func newBoundedTransport(base http.RoundTripper, max int64) *boundedTransport {
	if base == nil {
		base = http.DefaultTransport
	}
	remain := &atomic.Int64{}
	remain.Store(max)
	return &boundedTransport{base: base, max: max, remain: remain}
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &boundedBody{body: resp.Body, transport: t}
	return resp, nil
}

type boundedBody struct {
	body      io.ReadCloser
	transport *boundedTransport
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if b.transport.remain.Add(-int64(n)) < 0 {
		return 0, fmt.Errorf("%w: the responses hold more than %d bytes", ErrSourceLimit, b.transport.max)
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }
