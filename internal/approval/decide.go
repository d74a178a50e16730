package approval

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// AwaitApproval blocks until request id is decided. Approved, it consumes
// the request once — checking that it binds to inv's tool, version and
// arguments — and returns nil. Denied or expired, it returns USER_DENIED
// (details.reason "denied" or "expired"). When ctx ends first the request
// is cancelled and ctx's error returned.
func (s *Service) AwaitApproval(ctx context.Context, id string, inv switchboard.Invocation) error {
	agent := inv.Caller
	if agent == "" {
		agent = "anonymous"
	}
	defer func() {
		s.mu.Lock()
		if s.pending[agent]--; s.pending[agent] <= 0 {
			delete(s.pending, agent)
		}
		s.mu.Unlock()
	}()
	// Subscribe before reading the store: a decision published after this
	// line wakes us, one made before it is in the store.
	wake := make(chan struct{}, 1)
	cancel, err := s.bus.Subscribe(topic(id), func([]byte) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return err
	}
	defer cancel()
	poll := time.NewTicker(s.opts.PollInterval)
	defer poll.Stop()
	var expiry *time.Timer
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	for {
		a, err := s.store.ApprovalGet(context.WithoutCancel(ctx), id)
		if err != nil {
			return err
		}
		switch a.Status {
		case switchboard.ApprovalApproved:
			return s.consume(ctx, a, inv)
		case switchboard.ApprovalDenied, switchboard.ApprovalExpired:
			return denied(a)
		case switchboard.ApprovalCancelled:
			return switchboard.Errorf(switchboard.CodeCancelled, "approval %s was cancelled: %s", a.ID, a.Reason)
		}
		if !s.now().Before(a.ExpiresAt) {
			s.expire(ctx, a)
			continue
		}
		if expiry == nil {
			expiry = time.NewTimer(a.ExpiresAt.Sub(s.now()))
		}
		select {
		case <-wake:
		case <-poll.C:
		case <-expiry.C:
			expiry.Reset(time.Second) // re-armed in case the clock says not yet
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), ErrStopped) {
				return context.Cause(ctx) // a resumed call: the request waits for the next start
			}
			s.settle(ctx, a, switchboard.ApprovalCancelled, stoppedWaiting(ctx), "system", channelCaller)
			if cur, err := s.store.ApprovalGet(context.WithoutCancel(ctx), id); err == nil && cur.Status == switchboard.ApprovalDenied {
				return denied(cur) // the user's denial won the race; keep its code
			}
			return context.Cause(ctx)
		}
	}
}

// stoppedWaiting is the reason recorded on a request whose caller stopped
// waiting: the cause when it says why (an interrupted agent, a cancelled
// run), so whoever reads the approval later learns what ended it.
func stoppedWaiting(ctx context.Context) string {
	var e *switchboard.Error
	if errors.As(context.Cause(ctx), &e) && e.Code == switchboard.CodeCancelled && e.Message != "" {
		return "the caller stopped waiting: " + e.Message
	}
	return "the caller stopped waiting"
}

// consume uses an approved request for inv, once.
func (s *Service) consume(ctx context.Context, a switchboard.ApprovalRequest, inv switchboard.Invocation) error {
	if a.InvocationID != inv.ID || a.Tool != inv.Tool || a.ToolVersion != inv.ToolVersion || a.ArgsHash != ArgsHash(inv.Input) {
		return switchboard.Errorf(switchboard.CodeForbidden,
			"approval %s was given for another call (invocation %s, %s v%d); it does not cover this one", a.ID, a.InvocationID, a.Tool, a.ToolVersion)
	}
	if _, err := s.store.ApprovalConsume(context.WithoutCancel(ctx), a.ID, s.now()); err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeConflict {
			return switchboard.Errorf(switchboard.CodeForbidden, "approval %s was already used; an approval is good for one call", a.ID)
		}
		return err
	}
	return nil
}

func denied(a switchboard.ApprovalRequest) error {
	reason := "denied"
	msg := fmt.Sprintf("the user denied %s (approval %s)", a.Tool, a.ID)
	if a.Status == switchboard.ApprovalExpired {
		reason = "expired"
		msg = fmt.Sprintf("nobody approved %s before approval %s expired at %s; the call was not run", a.Tool, a.ID, a.ExpiresAt.Format(time.RFC3339))
	} else if a.Reason != "" {
		msg += ": " + a.Reason
	}
	return switchboard.Errorf(switchboard.CodeUserDenied, "%s", msg).WithDetails(map[string]any{
		"reason": reason, "approvalId": a.ID, "decidedBy": a.DecidedBy, "channel": a.Channel, "note": a.Reason,
	})
}

// Decision is a human's answer to a request.
type Decision struct {
	// By must be a user principal: agents can never decide, their own
	// calls or anyone's.
	By      switchboard.Principal
	Approve bool
	Reason  string
	// Channel says how the decision arrived (ChannelHTTP, ChannelCLI,
	// ChannelSDK, ChannelElicitation); it is recorded in the ledger.
	Channel string
}

// Decide settles request id: FORBIDDEN unless d.By is a user, CONFLICT if
// it is already decided, expired or cancelled (the message says which and
// by whom). Exactly one decision of a request succeeds.
func (s *Service) Decide(ctx context.Context, id string, d Decision) (switchboard.ApprovalRequest, error) {
	if d.By.Kind != switchboard.PrincipalUser {
		return switchboard.ApprovalRequest{}, switchboard.Errorf(switchboard.CodeForbidden,
			"only the user may approve or deny calls; %s cannot", d.By)
	}
	if len(d.Reason) > 1000 {
		return switchboard.ApprovalRequest{}, switchboard.Errorf(switchboard.CodeInvalidInput, "reason is longer than 1000 characters")
	}
	a, err := s.store.ApprovalGet(ctx, id)
	if err != nil {
		return a, err
	}
	if a.User != "" && a.User != switchboard.Operator && !workspace.MayDecide(ctx, nil, workspace.ViewerOf(d.By), a) {
		// A call made for another user: the same answer as an unknown id,
		// so ids of other users' approvals cannot be probed. (An operator's
		// request is decided by whom its channel admits, as before users:
		// a tab its own assistant's calls, which the admin may start.)
		return switchboard.ApprovalRequest{}, switchboard.Errorf(switchboard.CodeNotFound, "no approval %q", id)
	}
	if a.Agent == d.By.String() {
		return a, switchboard.Errorf(switchboard.CodeForbidden, "%s cannot decide its own call", d.By)
	}
	if a.Status == switchboard.ApprovalPending && !s.now().Before(a.ExpiresAt) {
		s.expire(ctx, a)
		if a, err = s.store.ApprovalGet(ctx, id); err != nil {
			return a, err
		}
	}
	if a.Status != switchboard.ApprovalPending {
		return a, settled(a)
	}
	status := switchboard.ApprovalDenied
	if d.Approve {
		status = switchboard.ApprovalApproved
	}
	if d.Channel == "" {
		d.Channel = ChannelHTTP
	}
	stored, ok, err := s.settle(ctx, a, status, d.Reason, d.By.String(), d.Channel)
	if err != nil {
		return stored, err
	}
	if !ok {
		return stored, settled(stored)
	}
	return stored, nil
}

func settled(a switchboard.ApprovalRequest) error {
	msg := fmt.Sprintf("approval %s is already %s", a.ID, a.Status)
	if a.DecidedBy != "" {
		msg += fmt.Sprintf(" (by %s via %s)", a.DecidedBy, a.Channel)
	}
	return switchboard.Errorf(switchboard.CodeConflict, "%s", msg).WithDetails(map[string]any{"status": a.Status, "approvalId": a.ID})
}

// expire denies a pending request whose time is up.
func (s *Service) expire(ctx context.Context, a switchboard.ApprovalRequest) {
	s.settle(ctx, a, switchboard.ApprovalExpired, "expired", "system", channelExpiry)
}

// ExpireDue expires every pending request whose time is up (the waiter of
// each does so itself; this sweeps requests whose waiter is gone).
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	list, err := s.store.ApprovalList(ctx, switchboard.ApprovalFilter{Status: switchboard.ApprovalPending, Limit: 1000})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range list {
		if !s.now().Before(a.ExpiresAt) {
			if _, ok, _ := s.settle(ctx, a, switchboard.ApprovalExpired, "expired", "system", channelExpiry); ok {
				n++
			}
		}
	}
	return n, nil
}

// settle is the one compare-and-swap from pending. Its winner writes the
// ledger entry, wakes the waiter and tells the tabs; a loser changes
// nothing and gets the stored request with ok false.
func (s *Service) settle(ctx context.Context, a switchboard.ApprovalRequest, status switchboard.ApprovalStatus, reason, by, channel string) (switchboard.ApprovalRequest, bool, error) {
	wctx := context.WithoutCancel(ctx)
	override := workspace.Override(by, a)
	a.Status, a.Reason, a.DecidedBy, a.Channel, a.DecidedAt = status, reason, by, channel, s.now()
	stored, err := s.store.ApprovalDecide(wctx, a)
	if err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeConflict {
			return stored, false, nil
		}
		return stored, false, err
	}
	if s.ledger != nil {
		d := map[string]any{
			"approvalId": stored.ID, "invocationId": stored.InvocationID, "decision": stored.Status,
			"reason": stored.Reason, "agent": stored.Agent, "agentId": stored.AgentID, "channel": stored.Channel,
			"toolVersion": stored.ToolVersion, "argsHash": stored.ArgsHash, "user": cmp.Or(stored.User, switchboard.Operator),
			"waitMs": stored.DecidedAt.Sub(stored.CreatedAt).Milliseconds(), // the metrics' approval wait
		}
		if override {
			// The operator decided a call asked of another user: said so,
			// so that user's ledger shows who decided in their place.
			d["override"] = true
		}
		details, _ := json.Marshal(d)
		prov, _ := json.Marshal(map[string]string{"channel": stored.Channel})
		e := &switchboard.ActivityEntry{Actor: by, Verb: activity.VerbApprovalDecide, Target: stored.Tool, Provenance: prov, Details: details}
		if err := s.ledger.Append(wctx, e); err != nil {
			s.log.ErrorContext(ctx, "append approval decision to the ledger", "approval", stored.ID, "err", err)
		}
	}
	if err := s.bus.Publish(wctx, topic(stored.ID), []byte(stored.Status)); err != nil {
		s.log.WarnContext(ctx, "publish approval decision", "approval", stored.ID, "err", err)
	}
	s.notify(wctx, EventResolved, resolvedEvent(stored))
	s.log.InfoContext(ctx, "approval decided", "approval", stored.ID, "status", stored.Status, "by", by, "channel", channel)
	return stored, true, nil
}

// List returns requests matching f, oldest first.
func (s *Service) List(ctx context.Context, f switchboard.ApprovalFilter) ([]switchboard.ApprovalRequest, error) {
	return s.store.ApprovalList(ctx, f)
}

// Get returns one request.
func (s *Service) Get(ctx context.Context, id string) (switchboard.ApprovalRequest, error) {
	return s.store.ApprovalGet(ctx, id)
}

// RequestEvent is the data of an approval.request event on a tab's stream.
type RequestEvent struct {
	ApprovalID   string            `json:"approvalId"`
	InvocationID string            `json:"invocationId"`
	Tool         string            `json:"tool"`
	Input        json.RawMessage   `json:"input"`
	Summary      string            `json:"summary"`
	Class        switchboard.Class `json:"class"`
	Agent        string            `json:"agent"`
	AgentID      string            `json:"agentId,omitempty"`
	ExpiresAt    time.Time         `json:"expiresAt"`
	// SessionID is the tab the call was made in: the only tab told.
	SessionID string `json:"sessionId,omitempty"`
	// User is the person the call was made for: only their tabs are told.
	User string `json:"user,omitempty"`
}

// ResolvedEvent is the data of an approval.resolved event.
type ResolvedEvent struct {
	ApprovalID   string                     `json:"approvalId"`
	InvocationID string                     `json:"invocationId"`
	Status       switchboard.ApprovalStatus `json:"status"`
	DecidedBy    string                     `json:"decidedBy,omitempty"`
	Channel      string                     `json:"channel,omitempty"`
	Reason       string                     `json:"reason,omitempty"`
	Agent        string                     `json:"agent"`
	AgentID      string                     `json:"agentId,omitempty"`
	SessionID    string                     `json:"sessionId,omitempty"`
	User         string                     `json:"user,omitempty"`
}

func requestEvent(a switchboard.ApprovalRequest) []byte {
	input := a.Input
	if len(input) > maxEventInput {
		input, _ = json.Marshal(map[string]any{"truncated": true, "bytes": len(input)})
	}
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	b, _ := json.Marshal(RequestEvent{ApprovalID: a.ID, InvocationID: a.InvocationID, Tool: a.Tool, Input: input,
		Summary: a.Summary, Class: a.Class, Agent: a.Agent, AgentID: a.AgentID, ExpiresAt: a.ExpiresAt, SessionID: a.SessionID, User: a.User})
	return b
}

func resolvedEvent(a switchboard.ApprovalRequest) []byte {
	b, _ := json.Marshal(ResolvedEvent{ApprovalID: a.ID, InvocationID: a.InvocationID, Status: a.Status,
		DecidedBy: a.DecidedBy, Channel: a.Channel, Reason: a.Reason, Agent: a.Agent, AgentID: a.AgentID, SessionID: a.SessionID, User: a.User})
	return b
}

// TabNotifier returns a Notifier that delivers an approval event to the tab
// of the built-in assistant's call through send, and to no tab otherwise:
// workspace.TabMayDecide without an agent registry. The daemon's notifier
// also reaches the tabs of the user a background or external agent acts
// for (internal/daemon/agents.go).
func TabNotifier(send func(ctx context.Context, sessionID, kind string, data []byte) error) Notifier {
	return func(ctx context.Context, kind string, data []byte) {
		var to struct {
			SessionID string `json:"sessionId"`
			Agent     string `json:"agent"`
		}
		if json.Unmarshal(data, &to) != nil || to.SessionID == "" ||
			!workspace.TabMayDecide(ctx, nil, switchboard.ApprovalRequest{SessionID: to.SessionID, Agent: to.Agent}, to.SessionID, "") {
			return
		}
		_ = send(ctx, to.SessionID, kind, data) // the tab is gone or on another replica: nothing to tell here
	}
}

// Wait blocks until request id is no longer pending and returns it as
// decided, or returns ctx's error. Unlike AwaitApproval it neither expires,
// consumes nor cancels anything: a channel that asks a human elsewhere (MCP
// elicitation) uses it to stop asking once another channel has decided.
func (s *Service) Wait(ctx context.Context, id string) (switchboard.ApprovalRequest, error) {
	wake := make(chan struct{}, 1)
	cancel, err := s.bus.Subscribe(topic(id), func([]byte) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return switchboard.ApprovalRequest{}, err
	}
	defer cancel()
	poll := time.NewTicker(s.opts.PollInterval)
	defer poll.Stop()
	for {
		a, err := s.store.ApprovalGet(ctx, id)
		if err != nil {
			return a, err
		}
		if a.Status != switchboard.ApprovalPending {
			return a, nil
		}
		select {
		case <-wake:
		case <-poll.C:
		case <-ctx.Done():
			return a, context.Cause(ctx)
		}
	}
}
