package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/sse"
)

// SessionCredentials are what the app's backend hands to a tab.
type SessionCredentials struct {
	SessionID    string `json:"sessionId"`
	SessionToken string `json:"sessionToken"`
}

// CreateSession opens a browser session for principal (the signed-in user;
// may be empty). Needs the admin token.
func (c *Client) CreateSession(ctx context.Context, principal string) (SessionCredentials, error) {
	return c.OpenSession(ctx, SessionRequest{Principal: principal})
}

// SessionRequest opens a session for a signed-in user with the scope the
// app gives that user: the built-in assistant of a run the tab starts may
// call only the tools Allow admits minus Deny, on the panels and slots
// given (the same globs as an agent token's). Empty lists limit nothing.
type SessionRequest struct {
	Principal string   `json:"principal,omitempty"`
	Allow     []string `json:"allow,omitempty"`
	Deny      []string `json:"deny,omitempty"`
	Panels    []string `json:"panels,omitempty"`
	Slots     []string `json:"slots,omitempty"`
}

// OpenSession opens a browser session as req says. Needs the admin token.
func (c *Client) OpenSession(ctx context.Context, req SessionRequest) (SessionCredentials, error) {
	var out SessionCredentials
	err := c.Do(ctx, http.MethodPost, "/api/v1/sessions", req, &out)
	return out, err
}

// Sessions lists the open tabs the daemon keeps, newest first: each with
// its state, tools and contexts, trimmed to what the client's token may
// see (a session token sees only its own session).
func (c *Client) Sessions(ctx context.Context) ([]switchboard.SessionInfo, error) {
	var out struct {
		Items []switchboard.SessionInfo `json:"items"`
	}
	err := c.Do(ctx, http.MethodGet, "/api/v1/sessions", nil, &out)
	return out.Items, err
}

// Session describes one browser session: a kept tab as Sessions shows it,
// else gone or closed. NOT_FOUND for an unknown id.
func (c *Client) Session(ctx context.Context, id string) (switchboard.SessionInfo, error) {
	var out switchboard.SessionInfo
	err := c.Do(ctx, http.MethodGet, "/api/v1/sessions/"+pathEscape(id), nil, &out)
	return out, err
}

// CloseSession ends a session for good.
func (c *Client) CloseSession(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/sessions/"+pathEscape(id), nil, nil)
}

// SessionTools lists the live browser tools a session advertises.
func (c *Client) SessionTools(ctx context.Context, id string) ([]switchboard.Tool, error) {
	var m switchboard.Manifest
	err := c.Do(ctx, http.MethodGet, "/api/v1/sessions/"+pathEscape(id)+"/tools", nil, &m)
	return m.Tools, err
}

// Tab returns the tab side of a session: what the browser SDK does, in Go
// (tests, benchmarks, headless agents' own tabs). It talks to the same
// daemon with the session token.
func (c *Client) Tab(cred SessionCredentials) *Tab {
	tc := *c
	tc.token = cred.SessionToken
	return &Tab{c: &tc, ID: cred.SessionID}
}

// Tab is one browser session used from Go.
type Tab struct {
	c  *Client
	ID string
}

// Advertise replaces the tab's live browser tools.
func (t *Tab) Advertise(ctx context.Context, tools []switchboard.Tool) ([]switchboard.Tool, error) {
	if tools == nil {
		tools = []switchboard.Tool{}
	}
	var m switchboard.Manifest
	err := t.c.Do(ctx, http.MethodPut, "/api/v1/sessions/"+pathEscape(t.ID)+"/tools", switchboard.Manifest{Tools: tools}, &m)
	return m.Tools, err
}

// Close ends the session (as the SDK does when the page goes away).
func (t *Tab) Close(ctx context.Context) error {
	return t.c.Do(ctx, http.MethodDelete, "/api/v1/sessions/"+pathEscape(t.ID), nil, nil)
}

// PostResult sends the answer to a request on the return path and returns
// the status the daemon recorded.
func (t *Tab) PostResult(ctx context.Context, runID string, res switchboard.BrowserActionResult) (switchboard.Status, error) {
	if res.ProtocolVersion == "" {
		res.ProtocolVersion = switchboard.ProtocolVersion
	}
	var out struct {
		Status switchboard.Status `json:"status"`
	}
	err := t.c.Do(ctx, http.MethodPost, "/api/v1/runs/"+pathEscape(runID)+"/actions/"+pathEscape(res.InvocationID)+"/result", res, &out)
	return out.Status, err
}

// StreamEvent is one SSE frame of a tab's stream.
type StreamEvent struct {
	ID   string
	Kind string
	Data json.RawMessage
}

// EventStream reads a tab's event stream.
type EventStream struct {
	body   io.ReadCloser
	r      *sse.Reader
	cancel context.CancelFunc

	mu         sync.Mutex
	last       string
	heartbeats int
}

// Events opens the tab's stream, resuming after lastEventID when set.
func (t *Tab) Events(ctx context.Context, lastEventID string) (*EventStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.c.base+"/api/v1/sessions/"+pathEscape(t.ID)+"/events", nil)
	if err != nil {
		cancel()
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "build request: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+t.c.token)
	req.Header.Set("Accept", sse.ContentType)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := t.c.hc.Do(req)
	if err != nil {
		cancel()
		return nil, t.c.transportError(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var env switchboard.ErrorEnvelope
		if json.Unmarshal(b, &env) == nil && env.Error != nil {
			return nil, env.Error
		}
		return nil, switchboard.Errorf(switchboard.CodeInternal, "daemon answered %s: %s", resp.Status, excerpt(b))
	}
	return newEventStream(resp.Body, cancel, lastEventID), nil
}

func newEventStream(body io.ReadCloser, cancel context.CancelFunc, lastEventID string) *EventStream {
	return &EventStream{body: body, r: sse.NewReader(body), cancel: cancel, last: lastEventID}
}

// Next blocks for the next event; io.EOF when the daemon ended the stream.
// Keep-alive comments are counted, not returned.
func (s *EventStream) Next() (StreamEvent, error) {
	ev, err := s.r.Next()
	s.mu.Lock()
	s.heartbeats = s.r.Comments()
	if ev.ID != "" {
		s.last = ev.ID
	}
	s.mu.Unlock()
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) {
			err = io.EOF
		}
		return StreamEvent{}, err
	}
	return StreamEvent{ID: ev.ID, Kind: ev.Event, Data: ev.Data}, nil
}

// LastEventID is the id of the last event read, for resuming.
func (s *EventStream) LastEventID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Heartbeats counts the keep-alive comments read so far.
func (s *EventStream) Heartbeats() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heartbeats
}

// Close ends the stream from the tab's side.
func (s *EventStream) Close() error {
	s.cancel()
	return s.body.Close()
}

// ActionHandler runs one dispatched request. Its result becomes ok:true; an
// error becomes ok:false with the error's code. ctx ends when the daemon
// cancels the call.
type ActionHandler func(ctx context.Context, req switchboard.BrowserActionRequest) (json.RawMessage, error)

// Serve runs the tab the way the browser SDK does until ctx ends or the
// session is closed: it reads the stream, runs each request's handler in
// its own goroutine, posts the result, aborts handlers the daemon cancels,
// and reconnects with jittered backoff, resuming with Last-Event-ID.
func (t *Tab) Serve(ctx context.Context, h ActionHandler) error {
	var (
		mu      sync.Mutex
		running = map[string]context.CancelFunc{}
		wg      sync.WaitGroup
		last    string
	)
	defer wg.Wait()
	for attempt := 0; ; attempt++ {
		s, err := t.Events(ctx, last)
		if err != nil {
			switch switchboard.CodeOf(err) {
			case switchboard.CodeSessionGone, switchboard.CodeUnauthorized, switchboard.CodeNotFound:
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			d := min(5*time.Second, 100*time.Millisecond<<min(attempt, 6))
			select {
			case <-time.After(d/2 + rand.N(d/2+1)):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		attempt = 0
		for {
			ev, err := s.Next()
			if err != nil {
				break
			}
			last = s.LastEventID()
			switch ev.Kind {
			case "browser.action.request":
				var req switchboard.BrowserActionRequest
				if json.Unmarshal(ev.Data, &req) != nil {
					continue
				}
				mu.Lock()
				if _, dup := running[req.InvocationID]; dup {
					mu.Unlock()
					continue
				}
				hctx, cancel := context.WithCancel(ctx)
				running[req.InvocationID] = cancel
				mu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() {
						mu.Lock()
						delete(running, req.InvocationID)
						mu.Unlock()
						cancel()
					}()
					res := switchboard.BrowserActionResult{InvocationID: req.InvocationID}
					out, err := h(hctx, req)
					if hctx.Err() != nil {
						return // cancelled by the daemon: it has already recorded the outcome
					}
					if err != nil {
						res.Error = switchboard.AsError(err)
					} else {
						res.OK, res.Result = true, out
					}
					_, _ = t.PostResult(context.WithoutCancel(ctx), req.RunID, res)
				}()
			case "browser.action.cancel":
				var c struct {
					InvocationID string `json:"invocationId"`
				}
				if json.Unmarshal(ev.Data, &c) == nil {
					mu.Lock()
					if cancel := running[c.InvocationID]; cancel != nil {
						cancel()
					}
					mu.Unlock()
				}
			}
		}
		s.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
