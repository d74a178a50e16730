package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/sse"
)

// Governance: calls with an idempotency key or answered asynchronously,
// approvals, agent tokens, the activity ledger and jobs.

// CallExtra are the governed options of a call.
type CallExtra struct {
	// IdempotencyKey makes a retry replay the first call's answer
	// (Idempotency-Key header).
	IdempotencyKey string
	// Async answers as soon as the call is recorded (202 with status
	// awaiting_approval or dispatched); poll GetInvocation for the outcome.
	Async bool
	// Task names the delegated task assigned to the calling agent that
	// the call is made for (Switchboard-Task header): the task's envelope
	// and budget apply, and the call becomes one of its steps.
	Task string
}

// CallToolWith is CallTool with an idempotency key and/or asynchronously.
func (c *Client) CallToolWith(ctx context.Context, name string, input json.RawMessage, o CallOptions, x CallExtra) (switchboard.CallResponse, error) {
	body := struct {
		Input     json.RawMessage `json:"input"`
		SessionID string          `json:"sessionId,omitempty"`
		RunID     string          `json:"runId,omitempty"`
		Async     bool            `json:"async,omitempty"`
	}{input, o.SessionID, o.RunID, x.Async}
	if len(body.Input) == 0 {
		body.Input = json.RawMessage(`{}`)
	}
	hdr := http.Header{}
	if x.IdempotencyKey != "" {
		hdr.Set("Idempotency-Key", x.IdempotencyKey)
	}
	if x.Task != "" {
		hdr.Set("Switchboard-Task", x.Task)
	}
	var resp switchboard.CallResponse
	err := c.doWith(ctx, http.MethodPost, "/api/v1/tools/"+pathEscape(name)+"/call", hdr, body, &resp)
	return resp, err
}

// doWith is Do with extra request headers.
func (c *Client) doWith(ctx context.Context, method, path string, hdr http.Header, in, out any) error {
	if len(hdr) == 0 {
		return c.Do(ctx, method, path, in, out)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "encode request: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(b))
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "build request: %v", err)
	}
	req.Header = hdr.Clone()
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(err)
	}
	defer resp.Body.Close()
	return decodeAnswer(c.base, resp, out)
}

// decodeAnswer reads a JSON answer the way Do does.
func decodeAnswer(base string, resp *http.Response, out any) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return switchboard.Errorf(switchboard.CodeUnavailable, "read response from %s: %v", base, err)
	}
	if resp.StatusCode >= 300 {
		var env switchboard.ErrorEnvelope
		if json.Unmarshal(b, &env) != nil || env.Error == nil {
			return switchboard.Errorf(switchboard.CodeInternal, "daemon answered %s: %s", resp.Status, excerpt(b))
		}
		if out != nil {
			_ = json.Unmarshal(b, out)
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

// ApprovalQuery selects approvals; the zero value lists pending ones.
type ApprovalQuery struct {
	// Status is pending (default), approved, denied, expired, cancelled or all.
	Status     string
	Agent      string
	Invocation string
	Limit      int
}

// Approvals lists approval requests, oldest first.
func (c *Client) Approvals(ctx context.Context, q ApprovalQuery) ([]switchboard.ApprovalRequest, error) {
	v := url.Values{}
	set(v, "status", q.Status)
	set(v, "agent", q.Agent)
	set(v, "invocation", q.Invocation)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out struct {
		Items []switchboard.ApprovalRequest `json:"items"`
	}
	err := c.Do(ctx, http.MethodGet, "/api/v1/approvals"+query(v), nil, &out)
	return out.Items, err
}

// Approval returns one approval request.
func (c *Client) Approval(ctx context.Context, id string) (switchboard.ApprovalRequest, error) {
	var a switchboard.ApprovalRequest
	err := c.Do(ctx, http.MethodGet, "/api/v1/approvals/"+pathEscape(id), nil, &a)
	return a, err
}

// Decision is a user's answer to an approval request.
type Decision struct {
	Approve bool
	Reason  string
	// Channel says how the decision was made: "http" (default) or "cli".
	Channel string
}

// Decide approves or denies an approval request. Only the user's token
// (or a tab's session token) may; an agent token gets FORBIDDEN.
func (c *Client) Decide(ctx context.Context, id string, d Decision) (switchboard.ApprovalRequest, error) {
	body := struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason,omitempty"`
		Channel  string `json:"channel,omitempty"`
	}{"deny", d.Reason, d.Channel}
	if d.Approve {
		body.Decision = "approve"
	}
	var a switchboard.ApprovalRequest
	err := c.Do(ctx, http.MethodPost, "/api/v1/approvals/"+pathEscape(id), body, &a)
	return a, err
}

// TokenCreated is a newly minted agent token; Token is shown only here.
type TokenCreated struct {
	switchboard.AgentToken
	Token string `json:"token"`
}

// TokenRequest says whom a token is for and what it may touch: allow and
// deny globs over tool names, and globs over the panels and page slots the
// agent may work on (empty: not limited).
type TokenRequest struct {
	Agent string `json:"agent"`
	// User is the person the agent acts for ("user:alice"); empty: the
	// operator.
	User   string   `json:"user,omitempty"`
	Allow  []string `json:"allow,omitempty"`
	Deny   []string `json:"deny,omitempty"`
	Panels []string `json:"panels,omitempty"`
	Slots  []string `json:"slots,omitempty"`
}

// CreateToken mints an agent token (admin token only).
func (c *Client) CreateToken(ctx context.Context, req TokenRequest) (TokenCreated, error) {
	var out TokenCreated
	err := c.Do(ctx, http.MethodPost, "/api/v1/tokens", req, &out)
	return out, err
}

// Tokens lists agent tokens (never their secrets).
func (c *Client) Tokens(ctx context.Context) ([]switchboard.AgentToken, error) {
	var out struct {
		Items []switchboard.AgentToken `json:"items"`
	}
	err := c.Do(ctx, http.MethodGet, "/api/v1/tokens", nil, &out)
	return out.Items, err
}

// RevokeToken ends an agent token at once.
func (c *Client) RevokeToken(ctx context.Context, id string) (switchboard.AgentToken, error) {
	var t switchboard.AgentToken
	err := c.Do(ctx, http.MethodDelete, "/api/v1/tokens/"+pathEscape(id), nil, &t)
	return t, err
}

// ActivityQuery selects ledger entries. Without After, the newest Limit
// entries; with it, the entries after that cursor, oldest first.
type ActivityQuery struct {
	After string
	Actor string
	Verb  string
	// Since is an RFC 3339 time or a duration such as 1h (that long ago).
	Since string
	Limit int
}

// ActivityPage is one page of the ledger; NextCursor continues it.
type ActivityPage struct {
	Items      []switchboard.ActivityEntry `json:"items"`
	NextCursor string                      `json:"nextCursor,omitempty"`
}

func (q ActivityQuery) values() url.Values {
	v := url.Values{}
	set(v, "after", q.After)
	set(v, "actor", q.Actor)
	set(v, "verb", q.Verb)
	set(v, "since", q.Since)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// Activity reads one page of the ledger.
func (c *Client) Activity(ctx context.Context, q ActivityQuery) (ActivityPage, error) {
	var p ActivityPage
	err := c.Do(ctx, http.MethodGet, "/api/v1/activity"+query(q.values()), nil, &p)
	return p, err
}

// FollowActivity streams ledger entries (after q.After when set, else only
// new ones) to fn until ctx ends, fn fails or the daemon ends the stream.
func (c *Client) FollowActivity(ctx context.Context, q ActivityQuery, fn func(switchboard.ActivityEntry) error) error {
	v := q.values()
	v.Set("follow", "1")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/v1/activity"+query(v), nil)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "build request: %v", err)
	}
	req.Header.Set("Accept", sse.ContentType)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeAnswer(c.base, resp, nil)
	}
	s := newEventStream(resp.Body, cancel, "")
	for {
		ev, err := s.Next()
		if err != nil {
			if ctx.Err() != nil || err == io.EOF {
				return nil
			}
			return switchboard.Errorf(switchboard.CodeUnavailable, "activity stream: %v", err)
		}
		if ev.Kind != "activity" {
			continue
		}
		var e switchboard.ActivityEntry
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return switchboard.Errorf(switchboard.CodeInternal, "decode activity entry: %v", err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// VerifyReport is the outcome of checking the ledger's hash chain and its
// checkpoints (activity.Report on the daemon).
type VerifyReport struct {
	OK          bool              `json:"ok"`
	Entries     int64             `json:"entries"`
	HeadID      int64             `json:"headId"`
	Head        string            `json:"headHash,omitempty"`
	BadID       int64             `json:"badId,omitempty"`
	Problem     string            `json:"problem,omitempty"`
	Checkpoints []json.RawMessage `json:"checkpoints,omitempty"`
	Missing     *struct {
		From int64 `json:"from"`
		To   int64 `json:"to"`
	} `json:"missing,omitempty"`
	PossibleCrash bool `json:"possibleCrash,omitempty"`
	// VouchedBy is the replica that said it signed the checkpoint given,
	// when the replica that answered holds another ledger.key and could
	// not check the signature itself (docs/deploy.md, "The ledger").
	VouchedBy string `json:"vouchedBy,omitempty"`
	// Gaps are ledger.rollback entries: a start found the ledger shorter
	// than its checkpoint and recorded it.
	Gaps []struct {
		Entry   int64 `json:"entry"`
		Missing *struct {
			From int64 `json:"from"`
			To   int64 `json:"to"`
		} `json:"missing,omitempty"`
		Cause string `json:"cause"`
	} `json:"gaps,omitempty"`
}

// VerifyActivity has the daemon recompute the ledger's hash chain and hold
// it to its own head checkpoint.
func (c *Client) VerifyActivity(ctx context.Context) (VerifyReport, error) {
	return c.VerifyActivityCheckpoint(ctx, nil)
}

// VerifyActivityCheckpoint is VerifyActivity that also holds the ledger to
// checkpoint, a document ActivityCheckpoint returned earlier (nil: none).
func (c *Client) VerifyActivityCheckpoint(ctx context.Context, checkpoint json.RawMessage) (VerifyReport, error) {
	var r VerifyReport
	path := "/api/v1/activity/verify"
	if len(checkpoint) > 0 {
		var compact bytes.Buffer
		if err := json.Compact(&compact, checkpoint); err != nil {
			return r, switchboard.Errorf(switchboard.CodeInvalidInput, "the checkpoint is not JSON: %v", err)
		}
		path += "?" + url.Values{"checkpoint": {compact.String()}}.Encode()
	}
	err := c.Do(ctx, http.MethodGet, path, nil, &r)
	return r, err
}

// ActivityCheckpoint has the daemon verify the ledger and sign a
// checkpoint of its head, to keep where the daemon cannot reach it.
func (c *Client) ActivityCheckpoint(ctx context.Context) (switchboard.LedgerCheckpoint, error) {
	var cp switchboard.LedgerCheckpoint
	err := c.Do(ctx, http.MethodGet, "/api/v1/activity/checkpoint", nil, &cp)
	return cp, err
}

// Reverse runs the declared inverse of ledger entry id as a fresh call
// (through approval when the caller is an agent). Async answers once the
// call is recorded.
func (c *Client) Reverse(ctx context.Context, id int64, async bool) (switchboard.CallResponse, error) {
	body := struct {
		Async bool `json:"async,omitempty"`
	}{async}
	var resp switchboard.CallResponse
	err := c.Do(ctx, http.MethodPost, "/api/v1/activity/"+strconv.FormatInt(id, 10)+"/reverse", body, &resp)
	return resp, err
}

// Job reports a job's status, progress, result or error.
func (c *Client) Job(ctx context.Context, id string) (switchboard.Job, error) {
	var j switchboard.Job
	err := c.Do(ctx, http.MethodGet, "/api/v1/jobs/"+pathEscape(id), nil, &j)
	return j, err
}

// CancelJob cancels a running job.
func (c *Client) CancelJob(ctx context.Context, id string) (switchboard.Job, error) {
	var j switchboard.Job
	err := c.Do(ctx, http.MethodPost, "/api/v1/jobs/"+pathEscape(id)+"/cancel", struct{}{}, &j)
	return j, err
}

func set(v url.Values, k, val string) {
	if val != "" {
		v.Set(k, val)
	}
}

func query(v url.Values) string {
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}
