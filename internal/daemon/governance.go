package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/job"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/quota"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// GovernanceOptions tune approvals, rate limits and the ledger. The zero
// value means the defaults.
type GovernanceOptions struct {
	// ApprovalTTL is how long a call waits for the user's decision before
	// it is denied as expired (default approval.DefaultTTL).
	ApprovalTTL time.Duration
	// ApprovalFloor is the least approval an agent's call of each class
	// gets (nil: mutate and job need the user; see approval.Options.Floor).
	ApprovalFloor map[switchboard.Class]switchboard.Approval
	// MaxPendingPerAgent bounds one agent's queue of calls awaiting approval.
	MaxPendingPerAgent int
	// RateLimit bounds agents' calls per agent and per tool; nil means
	// DefaultRateLimit, a zero RateLimit means unlimited.
	RateLimit *broker.RateLimit
	// LedgerAnchor keeps the ledger's head checkpoint outside the store
	// (in the data root), so that verify notices deleted last entries
	// across restarts; nil keeps it in memory for this process only. The
	// caller opens, starts and closes it (serve does).
	LedgerAnchor *activity.Anchor
	// DailyQuota bounds what each agent, and each user agents act for, may
	// spend a UTC day (calls, model tokens, cost), counted in the store;
	// the zero value limits nothing.
	DailyQuota switchboard.DailyQuota
}

// DefaultRateLimit is generous: an agent gets 20 calls a second (bursts of
// 60) and a tool 50 agent calls a second (bursts of 100); only a runaway
// loop meets it.
var DefaultRateLimit = broker.RateLimit{
	PerPrincipal: broker.Rate{PerSecond: 20, Burst: 60},
	PerTool:      broker.Rate{PerSecond: 50, Burst: 100},
}

// topicNotice carries approval events to every replica's tabs.
const topicNotice = "approval.notice"

// governance is what startGovernance wires, for the broker and transports.
type governance struct {
	ledger    *activity.Ledger
	approvals *approval.Service
	jobs      *job.Service
	tokens    *scope.Tokens
	quotas    *quota.Book // nil: no daily quota
	unsub     func()
	// console fans approval events out to the consoles' live inboxes on
	// this replica (GET /approvals/events); topicConsole is its one topic.
	console *bus.Local
}

const topicConsole = "approval.console"

// startGovernance builds the ledger, approvals, jobs and agent tokens over
// the store (what a previous run left running is the start-up sweep's,
// internal/daemon/sweep.go), and returns the broker options that put them on the call path. Governance is
// always on: every switchboard.Store keeps what it needs.
func (d *Daemon) startGovernance(ctx context.Context, opts Options) (broker.Options, error) {
	var bo broker.Options
	ledger, err := activity.New(ctx, opts.Store, &activity.Options{Logger: d.log, Anchor: opts.Governance.LedgerAnchor,
		OnEntry: d.observe, Vouch: d.vouch})
	if err != nil {
		return bo, fmt.Errorf("open the ledger: %w", err)
	}
	d.gov.ledger = ledger
	d.Ledger = ledger
	d.serveVouch()
	bo.OnActivity = ledger.Observe
	g := opts.Governance
	d.gov.approvals, err = approval.New(approval.Options{
		Store: opts.Store, Ledger: ledger, Bus: opts.Bus, Logger: d.log, TTL: g.ApprovalTTL,
		Floor: g.ApprovalFloor, MaxPendingPerAgent: g.MaxPendingPerAgent, Notify: d.notifyTabs(opts),
		// panel.run_action forwards to the action's tool, whose call asks.
		Delegates: map[string]bool{panel.ToolRunAction: true},
		// The canvas policy adds the user to agents' composes and deletes
		// on a guarded surface (internal/panel/canvas.go); it can only add.
		Situational: func(caller switchboard.Principal, t switchboard.Tool, input json.RawMessage) bool {
			return d.Panels != nil && d.Panels.NeedsApproval(caller, t, input)
		},
	})
	if err != nil {
		return bo, err
	}
	if d.gov.jobs, err = job.New(job.Options{Store: opts.Store, Ledger: ledger, Logger: d.log, OnChange: d.touchWorkspace,
		Sessions: jobSessions{d}, Replica: d.members.Self(), Forward: d.forwardJobCancel}); err != nil {
		return bo, err
	}
	d.serveJobCancels()
	d.gov.tokens = scope.NewTokens(opts.Store, nil)
	rl := g.RateLimit
	if rl == nil {
		rl = &DefaultRateLimit
	}
	d.Approvals, d.Jobs, d.Tokens = d.gov.approvals, d.gov.jobs, d.gov.tokens
	bo.Policy, bo.Jobs, bo.RateLimit = d.gov.approvals, d.gov.jobs, rl
	d.gov.quotas = quota.New(opts.Store, g.DailyQuota, nil)
	bo.Quotas = d.gov.quotas
	return bo, nil
}

// notifyTabs sends an approval event to every replica through the bus,
// whose subscriber on each replica updates its agent sessions and tells
// the tabs it holds that may decide it (internal/daemon/agents.go approvalEvent).
func (d *Daemon) notifyTabs(opts Options) approval.Notifier {
	d.gov.console = bus.NewLocal()
	broadcast := func(ctx context.Context, kind string, data []byte) {
		d.touchWorkspace() // every replica's digest shows the approval
		d.approvalEvent(ctx, kind, data)
		_ = d.gov.console.Publish(context.WithoutCancel(ctx), topicConsole, append([]byte(kind+"\n"), data...))
	}
	if opts.Bus == nil {
		return broadcast
	}
	unsub, err := opts.Bus.Subscribe(topicNotice, func(p []byte) {
		kind, data, ok := bytes.Cut(p, []byte("\n"))
		if ok {
			broadcast(context.Background(), string(kind), bytes.Clone(data))
		}
	})
	if err != nil {
		d.log.Warn("approval events reach only this replica's tabs", "err", err)
		return broadcast
	}
	d.gov.unsub = unsub
	return func(ctx context.Context, kind string, data []byte) {
		msg := append([]byte(kind+"\n"), data...)
		if err := opts.Bus.Publish(ctx, topicNotice, msg); err != nil {
			broadcast(ctx, kind, data) // too large for the bus: this replica's tabs at least
		}
	}
}

// apiGovernance is the transports' view of governance.
func (d *Daemon) apiGovernance(opts Options) *httpapi.Governance {
	return &httpapi.Governance{
		Tokens: d.gov.tokens, Approvals: d.gov.approvals, Ledger: d.gov.ledger, Jobs: d.gov.jobs,
		Quotas: d.gov.quotas,
		SessionUser: func(ctx context.Context, id string) (string, error) {
			s, err := opts.Store.SessionGet(ctx, id)
			return s.Principal, err
		},
		ApprovalEvents: func(h func(kind string, data []byte)) (func(), error) {
			return d.gov.console.Subscribe(topicConsole, func(p []byte) {
				if kind, data, ok := bytes.Cut(p, []byte("\n")); ok {
					h(string(kind), data)
				}
			})
		},
	}
}

// closeGovernance stops jobs and the event relay.
func (d *Daemon) closeGovernance() {
	if d.gov.jobs != nil {
		d.gov.jobs.Close()
	}
	if d.gov.unsub != nil {
		d.gov.unsub()
	}
}
