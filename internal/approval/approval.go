// Package approval is human-in-the-loop approval: the broker.Policy that
// decides, for every call on every path, whether the caller may make it
// (user-only tools are the user's; a full queue waits) and whether a human
// must approve it first, and the service through which approvals are
// requested, listed and decided.
//
// A call that needs approval is recorded as awaiting_approval; an
// ApprovalRequest binds to that one invocation (tool, tool version and
// argument hash), expires after TTL (an expiry is a denial with reason
// "expired"), and is consumed at most once when the call proceeds. Only a
// user principal may decide; deciding is a compare-and-swap in the store,
// so of an approve and a deny racing exactly one wins and writes the one
// ledger entry. Waiters are woken through the bus (and poll the store as a
// fallback), so a decision made on another replica reaches them. Each
// agent's requests are independent: one agent's pending approval blocks
// nobody else, and no pending approval holds a concurrency slot.
package approval

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/canonjson"
	"github.com/switchboardhq/switchboard/internal/redact"
	"github.com/switchboardhq/switchboard/internal/search"
)

// Defaults for Options.
const (
	DefaultTTL                = 10 * time.Minute
	DefaultMaxPendingPerAgent = 32
	DefaultPollInterval       = 2 * time.Second
	// maxEventInput bounds the input carried by an approval.request event;
	// a larger one is fetched with GET /approvals/{id}.
	maxEventInput = 2 << 10
)

// Channels through which a decision can arrive (recorded in the ledger).
const (
	ChannelHTTP        = "http"
	ChannelCLI         = "cli"
	ChannelSDK         = "sdk"
	ChannelElicitation = "elicitation"
	// ChannelAGUI and ChannelAISDK: a resume entry of an AG-UI run, an
	// approval response of an AI SDK chat (the client's own approval UI).
	ChannelAGUI    = "agui"
	ChannelAISDK   = "aisdk"
	channelExpiry  = "expiry"
	channelCaller  = "caller"
	channelRestart = "restart"
)

// Events sent to the user's tabs.
const (
	EventRequest  = "approval.request"
	EventResolved = "approval.resolved"
)

// Store is the part of switchboard.Store approvals need.
type Store interface {
	ApprovalCreate(ctx context.Context, a switchboard.ApprovalRequest) error
	ApprovalGet(ctx context.Context, id string) (switchboard.ApprovalRequest, error)
	ApprovalList(ctx context.Context, f switchboard.ApprovalFilter) ([]switchboard.ApprovalRequest, error)
	ApprovalDecide(ctx context.Context, a switchboard.ApprovalRequest) (switchboard.ApprovalRequest, error)
	ApprovalConsume(ctx context.Context, id string, at time.Time) (switchboard.ApprovalRequest, error)
	ApprovalCancelPending(ctx context.Context, at time.Time, reason string) (int, error)
}

// Appender writes ledger entries (*activity.Ledger).
type Appender interface {
	Append(ctx context.Context, e *switchboard.ActivityEntry) error
}

// Notifier shows an event (EventRequest, EventResolved) to the user's live
// tabs, so the app can render and retire approval cards. It must not block.
type Notifier func(ctx context.Context, kind string, data []byte)

// Options configures a Service. Store is required.
type Options struct {
	Store  Store
	Ledger Appender
	// Bus wakes waiters when a request is decided (several replicas share
	// one); nil means an in-process bus.
	Bus    bus.Bus
	Notify Notifier
	Logger *slog.Logger
	Now    func() time.Time
	// TTL is how long a request waits for a decision before it expires.
	TTL time.Duration
	// MaxPendingPerAgent bounds one agent's queue of waiting requests in
	// this process; past it the agent's next call is RATE_LIMITED.
	MaxPendingPerAgent int
	// PollInterval is how often a waiter re-reads the store, a fallback for
	// a decision whose bus message did not arrive.
	PollInterval time.Duration
	// Floor is the least approval an agent's call of a tool of each class
	// gets, whatever the tool declares (the registry stores an undeclared
	// approval as none, so "declared none" cannot be told from "not
	// declared"). nil means mutate and job need a human (hitl); an empty
	// map leaves every tool to its declared approval.
	Floor map[switchboard.Class]switchboard.Approval
	// Delegates names tools that only forward to another tool through the
	// broker (panel.run_action), so the forwarded call carries the approval:
	// the floor does not apply to them, or an agent's one act would ask the
	// user twice. Their declared approval still does.
	Delegates map[string]bool
	// Situational, when set, may add a human to an agent's call that its
	// tool's policy lets through, by what the call acts on: the panel
	// service's canvas policy (panel.Service.NeedsApproval) asks for
	// composes on a guarded surface. It can only add: a call the tool's
	// policy sends to a human goes there whatever it answers.
	Situational func(caller switchboard.Principal, t switchboard.Tool, input json.RawMessage) bool
}

// Service requests, awaits and decides approvals, and is the broker's
// Policy. Safe for concurrent use.
type Service struct {
	store  Store
	ledger Appender
	bus    bus.Bus
	notify Notifier
	log    *slog.Logger
	now    func() time.Time
	opts   Options

	mu      sync.Mutex
	pending map[string]int // agent → requests waiting in this process
}

// New returns a Service.
func New(opts Options) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("approval: Options.Store is required")
	}
	if opts.Bus == nil {
		opts.Bus = bus.NewLocal()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxPendingPerAgent <= 0 {
		opts.MaxPendingPerAgent = DefaultMaxPendingPerAgent
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Floor == nil {
		opts.Floor = map[switchboard.Class]switchboard.Approval{
			switchboard.ClassMutate: switchboard.ApprovalHITL,
			switchboard.ClassJob:    switchboard.ApprovalHITL,
		}
	}
	if opts.Notify == nil {
		opts.Notify = func(context.Context, string, []byte) {}
	}
	return &Service{store: opts.Store, ledger: opts.Ledger, bus: opts.Bus, notify: opts.Notify, log: opts.Logger,
		now: opts.Now, opts: opts, pending: map[string]int{}}, nil
}

// ErrStopped is the cause with which a daemon that stops ends the waits of
// calls it resumed (Recover's kept requests): such a request stays pending
// for the next start instead of being cancelled as "the caller stopped
// waiting".
var ErrStopped = errors.New("the daemon is stopping; the approval stays pending")

// Fate is what Recover does with one pending request.
type Fate int

const (
	// Cancel the request: nobody waits for it any more.
	Cancel Fate = iota
	// Keep it pending and return it: a durable call the daemon resumes.
	Keep
	// Leave it alone: another live replica waits for it.
	Leave
)

// Recover settles the requests a stopped daemon (a previous run, or a
// replica that died) left pending, as fate says of each. Kept requests are
// returned; cancelled ones — with their approval.decide ledger entry, by
// system via restart — are counted.
func (s *Service) Recover(ctx context.Context, fate func(switchboard.ApprovalRequest) Fate) ([]switchboard.ApprovalRequest, int, error) {
	var kept []switchboard.ApprovalRequest
	n := 0
	for {
		list, err := s.store.ApprovalList(ctx, switchboard.ApprovalFilter{Status: switchboard.ApprovalPending, Limit: recoverPage})
		if err != nil {
			return nil, n, err
		}
		cancelled := 0
		kept = kept[:0]
		for _, a := range list {
			f := Cancel
			if fate != nil {
				f = fate(a)
			}
			switch f {
			case Keep:
				kept = append(kept, a)
				continue
			case Leave:
				continue
			}
			_, ok, err := s.settle(ctx, a, switchboard.ApprovalCancelled,
				"the daemon restarted while this call waited, and it cannot wait across a restart; the call was not run", "system", channelRestart)
			if err != nil {
				return nil, n, err
			}
			if ok {
				cancelled++
			}
		}
		n += cancelled
		if len(list) < recoverPage || cancelled == 0 {
			return kept, n, nil
		}
	}
}

// recoverPage is how many pending requests Recover reads at a time.
const recoverPage = 1000

// Effective is t's approval policy for agents: the stricter of its
// declared approval and the floor of its class (none < hitl < user-only).
func (s *Service) Effective(t switchboard.Tool) switchboard.Approval {
	a, f := t.Approval, s.opts.Floor[t.Class]
	if s.opts.Delegates[t.Name] {
		f = ""
	}
	if rank(f) > rank(a) {
		a = f
	}
	if a == "" {
		a = switchboard.ApprovalNone
	}
	return a
}

func rank(a switchboard.Approval) int {
	switch a {
	case switchboard.ApprovalHITL:
		return 1
	case switchboard.ApprovalUserOnly:
		return 2
	}
	return 0
}

// Admit refuses an agent's call of a tool that is user-only for agents
// (FORBIDDEN) and an agent's call needing approval while its queue is full
// (RATE_LIMITED). Users are unscoped. Scope is not checked here: a tool
// outside the caller's scope, or user-only, is invisible to it in the
// registry the broker resolves calls through (registry.Visible), so such a
// call is TOOL_NOT_FOUND before it reaches the policy. The user-only
// refusal stays as the approval rule itself ("only a person runs it"), for
// a registry not told this service's floor (registry.Options.Approval).
func (s *Service) Admit(_ context.Context, caller switchboard.Principal, t switchboard.Tool) error {
	if caller.Kind != switchboard.PrincipalAgent {
		return nil
	}
	if s.Effective(t) == switchboard.ApprovalUserOnly {
		return switchboard.Errorf(switchboard.CodeForbidden, "%s is user-only: agents cannot call it; ask the user to run it", t.Name).
			WithDetails(map[string]any{"tool": t.Name, "reason": "user-only"})
	}
	if s.Effective(t) == switchboard.ApprovalHITL {
		s.mu.Lock()
		n := s.pending[caller.String()]
		s.mu.Unlock()
		if n >= s.opts.MaxPendingPerAgent {
			return switchboard.Errorf(switchboard.CodeRateLimited,
				"%s already has %d calls waiting for approval; wait for the user to decide them", caller, n).
				WithDetails(map[string]any{"pending": n, "retryAfterMs": s.opts.PollInterval.Milliseconds()})
		}
	}
	return nil
}

// NeedsApproval reports whether an agent's call of t waits for a human.
// The tool's policy and the caller's kind decide, and Situational may add
// a human by what the call acts on; nothing in the arguments can remove
// one (such as "approved": true).
func (s *Service) NeedsApproval(caller switchboard.Principal, t switchboard.Tool, input json.RawMessage) bool {
	if caller.Kind != switchboard.PrincipalAgent {
		return false
	}
	return s.Effective(t) == switchboard.ApprovalHITL || s.opts.Situational != nil && s.opts.Situational(caller, t, input)
}

// ArgsHash fingerprints a call's arguments, binding an approval to exactly
// those arguments. It hashes the canonical form (internal/canonjson, the
// same form the broker's idempotency digest uses): equal values hash
// alike, and integers stay exact, so 2^53+1 does not hash like 2^53.
// Arguments that have no canonical form hash as their bytes.
func ArgsHash(input json.RawMessage) string {
	b, err := canonjson.Canonical(input)
	if err != nil {
		b = input
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// RequestApproval records the request for inv, under inv.ApprovalID when
// the record names one, and tells the user's tabs.
func (s *Service) RequestApproval(ctx context.Context, inv switchboard.Invocation, t switchboard.Tool) (string, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	agent := inv.Caller
	if agent == "" {
		agent = "anonymous"
	}
	id := inv.ApprovalID // minted with the record, which names it
	if id == "" {
		id = "apr_" + randomHex(16)
	}
	a := switchboard.ApprovalRequest{
		ID: id, InvocationID: inv.ID, RunID: inv.RunID, SessionID: inv.SessionID,
		Tool: t.Name, ToolVersion: inv.ToolVersion, ArgsHash: ArgsHash(inv.Input), Input: redact.JSON(inv.Input),
		Summary: fmt.Sprintf("%s wants to call %s: %s", agent, t.Name, search.SummaryOf(t)),
		Class:   t.Class, Agent: agent, AgentID: inv.AgentID, User: actsFor(ctx), Status: switchboard.ApprovalPending, CreatedAt: now, ExpiresAt: now.Add(s.opts.TTL),
	}
	if a.Class == "" {
		a.Class = switchboard.ClassMutate
	}
	if err := s.store.ApprovalCreate(ctx, a); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.pending[agent]++
	s.mu.Unlock()
	s.notify(ctx, EventRequest, requestEvent(a))
	switchboard.ReportProgress(ctx, switchboard.Progress{Message: fmt.Sprintf(
		"waiting for the user to approve %s (approval %s, expires %s)", t.Name, a.ID, a.ExpiresAt.Format(time.RFC3339))})
	s.log.InfoContext(ctx, "approval requested", "approval", a.ID, "invocation", inv.ID, "tool", t.Name, "agent", agent)
	return a.ID, nil
}

// actsFor is the person the call in ctx is made for: whom its approval is
// asked of. A call with no caller in ctx is the operator's.
func actsFor(ctx context.Context) string {
	if p, ok := switchboard.PrincipalFrom(ctx); ok {
		return p.ActsFor()
	}
	return switchboard.Operator
}

func topic(id string) string { return "approval.decided." + id }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on supported platforms
	return hex.EncodeToString(b)
}
