// Package httpbind executes HTTP bindings: it turns one call of a sidecar
// api tool into one request to the app's backend and its answer into a
// result or a coded error. The broker owns everything else about the call
// (validation, records, limits, timeouts); this package only speaks HTTP.
//
// The mapping is the one DESIGN.md pins: {field} in the URL's path is
// filled from the input (escaped) and removed from it; for GET, HEAD and
// DELETE the remaining fields become the query string, otherwise the JSON
// body. One addition keeps OpenAPI imports honest: a `name={field}` pair in
// the URL's query part is filled the same way, and dropped when the input
// has no such field, so a POST can carry optional query parameters.
//
// Nothing from the caller's own request reaches the backend: the request is
// built from the binding and the input alone, so the caller's bearer token
// is never forwarded. Who the call is made for reaches it instead as a
// signed assertion (Options.Assert, the Switchboard-Assertion header). Header values are literal or read from the daemon's
// environment at call time; they never appear in errors or logs.
package httpbind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/switchboardhq/switchboard"
)

// Defaults for Options.
const (
	// DefaultMaxResponseBytes bounds a backend's answer; a larger one fails
	// with PAYLOAD_TOO_LARGE.
	DefaultMaxResponseBytes = 4 << 20
	// ExcerptBytes bounds the body excerpt quoted in UPSTREAM_ERROR details.
	ExcerptBytes = 1 << 10
	// maxRedirects bounds same-host redirects followed.
	maxRedirects = 5
)

// UserAgent is sent with every backend request.
const UserAgent = "switchboard/" + switchboard.ProtocolVersion

// Options configures a Client. A nil *Options means defaults.
type Options struct {
	// HTTPClient sends the requests. Default: a client with its own
	// transport sized for many concurrent calls to one backend. Its
	// CheckRedirect is replaced so redirects never leave the binding's host
	// (a header meant for the backend must not follow a redirect elsewhere)
	// and carry no Referer (it would echo the query).
	HTTPClient *http.Client
	// MaxResponseBytes bounds a response body. Default DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// LookupEnv resolves {"env": NAME} header values. Default os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Assert, when set, signs the assertion every request carries in the
	// Switchboard-Assertion header (assertion.Signer); the call comes from
	// WithCall.
	Assert func(ctx context.Context, c Call) (string, error)
	// Exchange, when set, trades the caller's OAuth token (WithSubjectToken)
	// for one the identity provider issues to a binding's
	// tokenExchange audience (oauth.Exchanger); nil: bindings that ask for
	// an exchange fail with TOOL_UNAVAILABLE.
	Exchange func(ctx context.Context, subject string, x switchboard.TokenExchange) (string, error)
}

// Client executes HTTP bindings. Safe for concurrent use.
type Client struct {
	assert   func(ctx context.Context, c Call) (string, error)
	exchange func(ctx context.Context, subject string, x switchboard.TokenExchange) (string, error)
	hc       *http.Client
	max      int64
	lookup   func(string) (string, bool)
	ownsHTTP bool
}

// New returns a Client.
func New(opts *Options) *Client {
	var o Options
	if opts != nil {
		o = *opts
	}
	c := &Client{max: o.MaxResponseBytes, lookup: o.LookupEnv, assert: o.Assert, exchange: o.Exchange}
	if c.max <= 0 {
		c.max = DefaultMaxResponseBytes
	}
	if c.lookup == nil {
		c.lookup = os.LookupEnv
	}
	hc := o.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// Tools are called concurrently against one or a few backends;
		// the default of 2 idle connections per host would make most calls
		// pay for a new connection.
		tr.MaxIdleConnsPerHost = 64
		tr.MaxIdleConns = 256
		hc = &http.Client{Transport: tr}
		c.ownsHTTP = true
	} else {
		cp := *hc
		hc = &cp
	}
	hc.CheckRedirect = sameHostRedirects
	c.hc = hc
	return c
}

// Close releases idle connections of a transport the Client created.
func (c *Client) Close() {
	if c.ownsHTTP {
		c.hc.CloseIdleConnections()
	}
}

// sameHostRedirects follows a redirect only on the binding's host, and
// without the Referer net/http adds: it carries the previous URL with its
// query, whose values may be secrets.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
		return http.ErrUseLastResponse
	}
	req.Header.Del("Referer")
	return nil
}

// Call sends one request for binding b with the (already validated) JSON
// object input and returns the result: the JSON response body, a wrapped
// text body, or null for an empty body. The deadline and cancellation come
// from ctx; Call reports a context error as it is so the caller can tell a
// timeout from a cancellation.
func (c *Client) Call(ctx context.Context, b *switchboard.HTTPBinding, input []byte) ([]byte, error) {
	req, err := c.build(ctx, b, input)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, transportError(ctx, req, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.max+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, switchboard.Errorf(switchboard.CodeUpstreamError, "read the backend's answer from %s: %v", req.URL.Host, err)
	}
	if int64(len(body)) > c.max {
		return nil, switchboard.Errorf(switchboard.CodePayloadTooLarge,
			"the backend's answer from %s %s is larger than %d bytes; ask for less (paging or filters) or raise the limit", req.Method, redactURL(req), c.max).
			WithDetails(map[string]any{"status": resp.StatusCode, "limitBytes": c.max})
	}
	return decodeResponse(req, resp, body)
}

// transportError turns a failed round trip into a coded error. Context
// errors pass through unchanged so the broker decides TIMEOUT or CANCELLED.
func transportError(ctx context.Context, req *http.Request, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return switchboard.Errorf(switchboard.CodeTimeout, "the backend at %s did not answer in time", req.URL.Host)
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return switchboard.Errorf(switchboard.CodeUpstreamError, "cannot reach the backend at %s: %v", req.URL.Host, op.Err)
	}
	return switchboard.Errorf(switchboard.CodeUpstreamError, "request to the backend at %s failed: %v", req.URL.Host, unwrapURLError(err))
}

func unwrapURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// redactURL renders the request URL without its query: query values come
// from the input and may be sensitive; the path is enough to find the route.
func redactURL(req *http.Request) string {
	u := *req.URL
	u.RawQuery, u.User = "", nil
	return u.String()
}

func newRequest(ctx context.Context, method, url string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "build the backend request: %v", err)
	}
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Accept", "application/json, text/plain;q=0.5, */*;q=0.1")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}
