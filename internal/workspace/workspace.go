package workspace

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
)

// Defaults for Options.
const (
	// DefaultTargetTokens is the size a digest is trimmed to by dropping
	// recent activity, then background contexts.
	DefaultTargetTokens = 1500
	// DefaultMaxTokens is the hard cap: past it anything else goes.
	DefaultMaxTokens = 3000
)

// Visibility is the one visibility predicate (*registry.Registry): what
// the caller in ctx may see. Get answers TOOL_NOT_FOUND for a tool hidden
// from the caller.
type Visibility interface {
	Visible(ctx context.Context, t switchboard.Tool) bool
	Get(ctx context.Context, name string) (switchboard.Tool, error)
}

// AgentLister lists the agent sessions at work (workspace.Agents).
type AgentLister interface {
	List(ctx context.Context) ([]switchboard.AgentSession, error)
}

// JobLister lists running jobs (*job.Service).
type JobLister interface {
	Running() []switchboard.Job
}

// ApprovalLister lists approval requests (*approval.Service).
type ApprovalLister interface {
	List(ctx context.Context, f switchboard.ApprovalFilter) ([]switchboard.ApprovalRequest, error)
}

// Ledger reads the activity ledger (*activity.Ledger): Head is the
// newest entry in memory and a channel closed when another arrives.
type Ledger interface {
	Tail(ctx context.Context, f switchboard.ActivityFilter) ([]switchboard.ActivityEntry, error)
	Head() (int64, <-chan struct{})
}

// TabStore keeps each tab's report with its session (switchboard.Store),
// so every replica's digest shows every tab's contexts.
type TabStore interface {
	SessionReport(ctx context.Context, id string, r switchboard.TabReport, at time.Time) error
	SessionGet(ctx context.Context, id string) (switchboard.Session, error)
	SessionList(ctx context.Context, f switchboard.SessionFilter) ([]switchboard.Session, error)
	ReplicaList(ctx context.Context) ([]switchboard.Replica, error)
}

// SessionWatcher tells when a tab is gone (*session.Manager).
type SessionWatcher interface {
	WatchGone(id string, fn func()) (cancel func(), err error)
}

// HandoffReader reads the handoffs delivered to an agent session
// (workspace.Agents).
type HandoffReader interface {
	Handoffs(id string) []switchboard.AgentHandoff
}

// PanelFinder names the panel instance whose action made invocation id,
// "" when none did (*panel.Service).
type PanelFinder interface {
	InstanceOf(invocationID string) string
}

// Options configures a Workspace. Registry is required; a nil source
// leaves its section of the digest empty.
type Options struct {
	Registry  Visibility
	Agents    AgentLister
	Jobs      JobLister
	Approvals ApprovalLister
	Ledger    Ledger
	// Handoffs shows the reading agent session its handoffs; Panels fills
	// pendingApprovals[].panelId.
	Handoffs HandoffReader
	Panels   PanelFinder
	// Tasks lists the open delegated tasks of user ("user:alice"), or,
	// for "", those the reader in ctx may see (the digest's tasks).
	Tasks func(ctx context.Context, user string) []switchboard.Task
	// Sessions drops a tab's contexts when the tab goes.
	Sessions SessionWatcher
	// Tabs stores each report with its session and Bus announces it, so
	// the other replicas read it (replicas.go); nil keeps the reports in
	// this process alone.
	Tabs TabStore
	Bus  bus.Bus
	// PanelAdmits, when set, says whether the reader in ctx may see the
	// panel instance id (panel.Service.Admits: its panel scope); the
	// digest lists only the panels it admits.
	PanelAdmits func(ctx context.Context, instanceID string) bool
	// Quotas returns the daily quotas of the reader in ctx (nil: none).
	Quotas func(ctx context.Context) []switchboard.DigestQuota
	// TargetTokens and MaxTokens set the digest's budget.
	TargetTokens int
	MaxTokens    int
	Logger       *slog.Logger
	Now          func() time.Time
}

// Workspace keeps the tabs' contexts and compiles digests from them and
// the other sources. Safe for concurrent use.
type Workspace struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time

	mu      sync.Mutex
	tabs    map[string]*tab
	version uint64
	changed chan struct{}
	cache   map[string]cached
	memo    tokenMemo

	stop chan struct{}
	done chan struct{}

	id      string // this workspace on the bus (replicas.go)
	inbox   chan string
	unsub   func()
	relayed chan struct{} // closed when the relay stops
}

// New returns a Workspace; Close stops its ledger watch.
func New(opts Options) (*Workspace, error) {
	if opts.Registry == nil {
		return nil, errors.New("workspace: Options.Registry is required")
	}
	if opts.TargetTokens <= 0 {
		opts.TargetTokens = DefaultTargetTokens
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	if opts.TargetTokens > opts.MaxTokens {
		opts.TargetTokens = opts.MaxTokens
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	w := &Workspace{opts: opts, log: opts.Logger, now: opts.Now, tabs: map[string]*tab{},
		changed: make(chan struct{}), cache: map[string]cached{}, stop: make(chan struct{}), done: make(chan struct{})}
	// The first wake channel is taken here, not in the goroutine: an
	// entry appended once New has returned must be a change batch even if
	// the goroutine has not run yet.
	var next <-chan struct{}
	if opts.Ledger != nil {
		_, next = opts.Ledger.Head()
	}
	go w.watchLedger(next)
	if err := w.startRelay(); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Close stops watching the ledger. Idempotent.
func (w *Workspace) Close() {
	w.mu.Lock()
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.mu.Unlock()
	<-w.done
	w.stopRelay()
}

// Touch marks a change batch: a source of the digest changed (an agent's
// status, an approval, a job). Cached digests are recompiled on next read
// and Changed's channel closes.
func (w *Workspace) Touch() {
	w.mu.Lock()
	w.version++
	close(w.changed)
	w.changed = make(chan struct{})
	clear(w.cache)
	w.mu.Unlock()
}

// Changed returns a channel closed at the next change, and the current
// version: readers compare versions to skip a digest that did not move.
func (w *Workspace) Changed() (<-chan struct{}, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed, w.version
}

// watchLedger turns new ledger entries into change batches, starting
// from next, the ledger's wake channel when the workspace was made.
func (w *Workspace) watchLedger(next <-chan struct{}) {
	defer close(w.done)
	if w.opts.Ledger == nil {
		<-w.stop
		return
	}
	for {
		select {
		case <-w.stop:
			return
		case <-next:
			_, next = w.opts.Ledger.Head()
			w.Touch()
		}
	}
}
