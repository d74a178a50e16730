// Package client is the typed Go client of the daemon's HTTP API. The CLI
// reaches the daemon only through it, and Go programs can use it as well.
// Every failure is a *switchboard.Error carrying the daemon's frozen code.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/switchboardhq/switchboard"
)

// DefaultAddr is where `switchboard serve` listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7766"

// Client talks to one daemon. Safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// Options configures a Client. A nil *Options means defaults.
type Options struct {
	HTTPClient *http.Client
}

// New returns a client for the daemon at addr ("host:port" or a URL) using
// token as its bearer.
func New(addr, token string, opts *Options) *Client {
	if addr == "" {
		addr = DefaultAddr
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	c := &Client{base: strings.TrimSuffix(addr, "/"), token: token, hc: http.DefaultClient}
	if opts != nil && opts.HTTPClient != nil {
		c.hc = opts.HTTPClient
	}
	return c
}

// BaseURL returns the daemon's base URL.
func (c *Client) BaseURL() string { return c.base }

// Do sends a JSON request and decodes a JSON answer into out (nil: discard).
// A non-2xx answer becomes the daemon's *switchboard.Error; when out is set
// and the body also decodes into it (e.g. a failed call's record), both are
// returned.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "encode request: %v", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "build request: %v", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return switchboard.Errorf(switchboard.CodeUnavailable, "read response from %s: %v", c.base, err)
	}
	if resp.StatusCode >= 300 {
		var env switchboard.ErrorEnvelope
		if json.Unmarshal(b, &env) != nil || env.Error == nil {
			return switchboard.Errorf(switchboard.CodeInternal, "daemon answered %s: %s", resp.Status, excerpt(b))
		}
		if out != nil {
			_ = json.Unmarshal(b, out) // best effort: failed calls carry their record
		}
		return env.Error
	}
	if out == nil || len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "decode response: %v", err)
	}
	return nil
}

func (c *Client) transportError(err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return switchboard.Errorf(switchboard.CodeUnavailable,
			"no daemon at %s; start one with `switchboard serve` or point --addr / SWITCHBOARD_ADDR at it", c.base)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return switchboard.Errorf(switchboard.CodeTimeout, "daemon at %s did not answer in time", c.base)
	}
	if errors.Is(err, context.Canceled) {
		return switchboard.Errorf(switchboard.CodeCancelled, "request cancelled")
	}
	return switchboard.Errorf(switchboard.CodeUnavailable, "reach daemon at %s: %v", c.base, err)
}

func excerpt(b []byte) string {
	const max = 200
	s := strings.TrimSpace(string(b))
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Health checks /healthz (no token needed).
func (c *Client) Health(ctx context.Context) error {
	return c.Do(ctx, http.MethodGet, "/healthz", nil, nil)
}

func pathEscape(s string) string { return url.PathEscape(s) }
