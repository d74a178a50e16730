package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/ratelimit"
	"github.com/switchboardhq/switchboard/internal/seats"
	"github.com/switchboardhq/switchboard/internal/strictjson"
)

// Defaults for AgentsOptions.
const (
	// DefaultHeartbeatInterval is how often a registered session (POST
	// /agents) must send a heartbeat.
	DefaultHeartbeatInterval = 15 * time.Second
	// DefaultMissedHeartbeats: a registered session that sends none for
	// this many intervals is done ("missed heartbeats").
	DefaultMissedHeartbeats = 3
	// DefaultIdleTimeout ends an external agent's session (an agent token
	// over HTTP, or an MCP session whose close the daemon did not see)
	// after this long without a request.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultRetainAgents is how many finished sessions stay listed.
	DefaultRetainAgents = 256
	// DefaultInterruptWait bounds how long an interrupt waits for the
	// calls it cancelled to record their end, so its answer is definite.
	DefaultInterruptWait = 10 * time.Second
	// maxLabel and maxTask bound what a host may register.
	maxLabel = 200
	maxTask  = 2000
)

// Transports an agent session reaches the daemon by.
const (
	TransportAGUI  = "agui"
	TransportAISDK = "aisdk"
	TransportRuns  = "runs"
	TransportMCP   = "mcp"
	TransportHTTP  = "http"
	TransportJob   = "job"
	TransportHost  = "host"
)

// Appender writes ledger entries (*activity.Ledger).
type Appender interface {
	Append(ctx context.Context, e *switchboard.ActivityEntry) error
}

// AgentsOptions configures Agents. Every field is optional.
type AgentsOptions struct {
	// Ledger records every status transition (verb agent.status) and every
	// handoff (agent.handoff).
	Ledger Appender
	// Notify is told of every transition, after it is recorded, with the
	// session and the user it acts for; the daemon turns it into
	// switchboard.agent.status events on the runs and tabs that can see
	// the session (on every replica). It must not block.
	Notify            func(ctx context.Context, r switchboard.AgentRecord)
	Now               func() time.Time
	Logger            *slog.Logger
	HeartbeatInterval time.Duration
	MissedHeartbeats  int
	IdleTimeout       time.Duration
	Retain            int
	// InterruptWait bounds how long Interrupt waits for the work it
	// cancelled (DefaultInterruptWait).
	InterruptWait time.Duration
	// Store, when set, keeps every session in the store that replicas
	// share (shared.go): this registry writes its own sessions through,
	// owned by Replica, and reads the others' from it. Nil keeps sessions
	// in this process only.
	Store   AgentStore
	Replica string
	// Relay reaches the replica that owns a session for an interrupt or a
	// handoff; nil answers UNAVAILABLE for another replica's session.
	Relay Relay
	// External hands h to an external A2A agent (h.To is its URL) and
	// returns it with what that agent answered (Remote); nil refuses
	// handoffs to URLs.
	External func(ctx context.Context, h switchboard.AgentHandoff) (switchboard.AgentHandoff, error)
	// FlushInterval is how often coalesced updates are written to Store
	// (DefaultFlushInterval).
	FlushInterval time.Duration
	// Registered caps the registered sessions (POST /agents: Spec.Heartbeat)
	// one principal holds on this replica and how fast it registers them
	//: past either, Start is RATE_LIMITED. Zero fields
	// mean DefaultRegisteredLimits' field; a negative Max or PerSecond, no
	// cap.
	Registered SessionLimits
}

// SessionLimits caps one principal's sessions: Max held at once and the
// Rate of opening them. It is internal/seats' Limits.
type SessionLimits = seats.Limits

// DefaultRegisteredLimits: a principal holds at most 100 registered
// sessions and registers at most 10 a second (bursts of 50).
var DefaultRegisteredLimits = SessionLimits{Max: 100, Rate: ratelimit.Rate{PerSecond: 10, Burst: 50}}

// Agents is the registry of agent sessions: every built-in assistant run,
// external agent, job and host-registered agent at work. A session's live
// half (what stops its work) is in the memory of the replica whose work it
// is; with AgentsOptions.Store every session is also in the store, where
// every replica reads it (shared.go). A session lives as long as the work
// it stands for, which a restart or its replica's death ends (the ledger
// keeps every transition). Safe for concurrent use.
type Agents struct {
	opts AgentsOptions
	log  *slog.Logger
	now  func() time.Time

	mu       sync.Mutex
	sessions map[string]*agentState
	keys     map[string]string // external key (principal + transport + connection) → session id
	finished []string          // ended session ids, oldest first, for retention
	notes    map[string][]Note // tab (browser session) → system notes for its assistant's next turn
	nextWork uint64
	dirty    map[string]bool // sessions whose coalesced update awaits Flush
	ended    int             // sessions ended since the store was last pruned
	seats    *seats.Seats    // registered sessions per principal (AgentsOptions.Registered)
}

// agentState is one session and what only the registry needs of it.
type agentState struct {
	wmu       sync.Mutex // serialises its writes to the store (persist)
	s         switchboard.AgentSession
	user      string                // the user it acts for ("user:alice"); see Viewer
	principal switchboard.Principal // for scope checks of what it may see
	interrupt func(ctx context.Context, reason string) error
	heartbeat bool // registered: expires when heartbeats stop
	idle      bool // external: expires after the idle window
	// quiet: an external session that has done no work yet (Work). Its
	// transitions are not written to the ledger, so an MCP session that
	// is opened and left idle leaves no permanent row (RELIABILITY row
	// 28); its first call records its start, and what follows is
	// recorded as for any session.
	quiet bool
	// release gives back a registered session's seat (AgentsOptions.Registered).
	release   func()
	key       string          // external dedupe key
	approvals map[string]bool // pending approvals of its calls
	settled   map[string]bool // approvals of its calls already answered (Park ignores them)
	base      switchboard.AgentStatus
	handoffs  []switchboard.AgentHandoff
	holder    string
	work      map[uint64]*work // calls in flight on its behalf (Work)
	// parked: its work ended waiting for approvals (an interrupted run);
	// it ends done with this reason when the last one is answered.
	parked string
	// stopping: an interrupt is cancelling its work; the ends that work
	// records do not finish the session first.
	stopping bool
	// cancelled: an approval of its calls was cancelled (a parked session
	// then ends cancelled).
	cancelled bool
}

// work is one call in flight for a session: an interrupt cancels it and
// waits for done.
type work struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// NewAgents returns an empty registry.
func NewAgents(opts *AgentsOptions) *Agents {
	var o AgentsOptions
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.MissedHeartbeats <= 0 {
		o.MissedHeartbeats = DefaultMissedHeartbeats
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Retain <= 0 {
		o.Retain = DefaultRetainAgents
	}
	if o.InterruptWait <= 0 {
		o.InterruptWait = DefaultInterruptWait
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	reg := o.Registered.Or(DefaultRegisteredLimits)
	return &Agents{opts: o, log: o.Logger, now: o.Now, sessions: map[string]*agentState{}, keys: map[string]string{},
		notes: map[string][]Note{}, dirty: map[string]bool{}, seats: seats.New("registered agent sessions", reg, o.Now)}
}

// HeartbeatInterval is how often a registered session must send one.
func (a *Agents) HeartbeatInterval() time.Duration { return a.opts.HeartbeatInterval }

// Spec describes a session to start.
type Spec struct {
	Kind  switchboard.AgentKind
	Label string
	// Principal is who acts (its String() is the ledger's actor); an
	// agent's scope comes from it.
	Principal switchboard.Principal
	// User is the user the session acts for ("user:alice"; "" means the
	// daemon's user, user:admin): who may see and stop it.
	User      string
	Transport string
	Task      string
	SessionID string
	RunID     string
	JobID     string
	// Status is the first status: idle (the default) or running.
	Status switchboard.AgentStatus
	// Interrupt stops the session's work (a run's or a job's own cancel);
	// nil means an interrupt only ends the session's record.
	Interrupt func(ctx context.Context, reason string) error
	// Heartbeat makes the session expire when its heartbeats stop (POST
	// /agents); Idle when its requests stop (external agents).
	Heartbeat bool
	Idle      bool
	// Holder names who what the session takes (panel leases) belongs to:
	// sessions with one holder share it ("chat:<thread>" for the built-in
	// assistant's runs of one chat). "" means the session itself.
	Holder string
}

// Start records a new session and returns it.
func (a *Agents) Start(ctx context.Context, sp Spec) (switchboard.AgentSession, error) {
	return a.start(ctx, sp, false)
}

// start is Start; quiet starts an external session whose transitions stay
// out of the ledger until it works (agentState.quiet).
func (a *Agents) start(ctx context.Context, sp Spec, quiet bool) (switchboard.AgentSession, error) {
	st, err := a.newState(sp)
	if err != nil {
		return switchboard.AgentSession{}, err
	}
	st.quiet = quiet
	if sp.Heartbeat { // registered on a caller's request: one of its seats
		// One agent name acting for two users holds two sets of seats.
		p := sp.Principal
		if p.User == "" {
			p.User = sp.User
		}
		if st.release, err = a.seats.Take(p.Key()); err != nil {
			return switchboard.AgentSession{}, err
		}
	}
	a.mu.Lock()
	a.sessions[st.s.ID] = st
	s := st.s
	a.mu.Unlock()
	a.transitioned(ctx, s, "")
	return s, nil
}

func (a *Agents) newState(sp Spec) (*agentState, error) {
	switch sp.Kind {
	case switchboard.AgentChat, switchboard.AgentVoice, switchboard.AgentBackground, switchboard.AgentExternal:
	default:
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "kind must be chat, voice, background or external, not %q", sp.Kind)
	}
	sp.Label = strings.TrimSpace(sp.Label)
	if len(sp.Label) > maxLabel || len(sp.Task) > maxTask {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "label is limited to %d bytes and task to %d", maxLabel, maxTask)
	}
	if r, bad := strictjson.Invisible(sp.Label); bad {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "label contains the control or format character %U; send a label of visible characters", r)
	}
	if sp.Status == "" {
		sp.Status = switchboard.AgentIdle
	}
	if sp.Status != switchboard.AgentIdle && sp.Status != switchboard.AgentRunning {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "a session starts idle or running, not %q", sp.Status)
	}
	if sp.Label == "" {
		sp.Label = sp.Principal.ID
	}
	now := a.now().UTC()
	st := &agentState{
		s: switchboard.AgentSession{
			ID: "agt_" + randomHex(12), Kind: sp.Kind, Label: sp.Label, Principal: sp.Principal.String(),
			Transport: sp.Transport, Status: sp.Status, Task: sp.Task, SessionID: sp.SessionID, RunID: sp.RunID,
			JobID: sp.JobID, StartedAt: now, LastSeen: now,
		},
		user: userOf(sp.User), principal: sp.Principal, interrupt: sp.Interrupt,
		heartbeat: sp.Heartbeat, idle: sp.Idle, approvals: map[string]bool{}, settled: map[string]bool{}, base: sp.Status,
		work: map[uint64]*work{}, holder: sp.Holder,
	}
	st.s.User = st.user
	if sp.Principal.Kind == switchboard.PrincipalAgent && (len(sp.Principal.Allow) > 0 || len(sp.Principal.Deny) > 0) {
		st.s.Scope = &switchboard.AgentScope{Allow: sp.Principal.Allow, Deny: sp.Principal.Deny}
	}
	return st, nil
}

// userOf normalises the user a session acts for: a session opened
// without naming one is the daemon's user (as the approval routes say).
func userOf(name string) string {
	p, ok := switchboard.UserPrincipal(name)
	if !ok {
		p.ID = "admin"
	}
	return p.String()
}

// External returns the session of an external agent acting over a
// transport, starting it on its first call, and marks it seen. conn
// tells apart concurrent connections of one principal (an MCP session
// id; "" for plain HTTP, where a principal is one session).
func (a *Agents) External(ctx context.Context, p switchboard.Principal, transport, conn string) string {
	key := externalKey(p, transport, conn)
	now := a.now().UTC()
	a.mu.Lock()
	if id, ok := a.keys[key]; ok {
		if st := a.sessions[id]; st != nil && !st.s.Status.Final() {
			st.s.LastSeen = now
			a.markDirtyLocked(id)
			a.mu.Unlock()
			return id
		}
		delete(a.keys, key)
	}
	a.mu.Unlock()
	sp := Spec{Kind: switchboard.AgentExternal, Label: p.ID, Principal: p, User: p.ActsFor(), Transport: transport,
		Status: switchboard.AgentRunning, Idle: true}
	if id, ok := a.adoptExternal(ctx, sp, key, now); ok {
		return id
	}
	s, err := a.start(ctx, sp, true)
	if err != nil { // a fixed spec: cannot fail
		return ""
	}
	a.mu.Lock()
	if id, ok := a.keys[key]; ok && a.sessions[id] != nil && !a.sessions[id].s.Status.Final() {
		// A concurrent first call won; drop ours without a trace of work.
		delete(a.sessions, s.ID)
		a.mu.Unlock()
		return id
	}
	a.keys[key] = s.ID
	a.sessions[s.ID].key = key
	a.mu.Unlock()
	return s.ID
}

// externalKey names an external session: one agent acting for two users
// (two tokens of one agent name) is two sessions, each its user's.
func externalKey(p switchboard.Principal, transport, conn string) string {
	return p.String() + "\x00" + p.ActsFor() + "\x00" + transport + "\x00" + conn
}

// EndExternal ends the external session of that connection (its MCP
// session closed).
func (a *Agents) EndExternal(ctx context.Context, p switchboard.Principal, transport, conn, reason string) {
	a.mu.Lock()
	id := a.keys[externalKey(p, transport, conn)]
	a.mu.Unlock()
	if id != "" {
		_, _ = a.End(ctx, id, switchboard.AgentDone, reason)
	}
}

// Touch marks a session seen (a request on its behalf).
func (a *Agents) Touch(id string) {
	a.mu.Lock()
	if st := a.sessions[id]; st != nil && !st.s.Status.Final() {
		st.s.LastSeen = a.now().UTC()
		a.markDirtyLocked(id)
	}
	a.mu.Unlock()
}

// SetStatus moves a live session to idle or running (with its task);
// waiting_approval is derived from its approvals (ApprovalPending) and
// stays shown while one waits. Unknown id: AGENT_NOT_FOUND; a finished
// session: CONFLICT.
func (a *Agents) SetStatus(ctx context.Context, id string, status switchboard.AgentStatus, task string) (switchboard.AgentSession, error) {
	if status != switchboard.AgentIdle && status != switchboard.AgentRunning {
		return switchboard.AgentSession{}, switchboard.Errorf(switchboard.CodeInvalidInput, "status must be idle or running, not %q", status)
	}
	a.mu.Lock()
	st, err := a.liveLocked(id)
	if err != nil {
		a.mu.Unlock()
		return switchboard.AgentSession{}, err
	}
	st.base = status
	st.s.LastSeen = a.now().UTC()
	changed := st.s.Task != task
	st.s.Task = task
	from := st.s.Status
	a.settleLocked(st)
	s := st.s
	a.mu.Unlock()
	if changed || s.Status != from {
		a.transitioned(ctx, s, from)
	}
	return s, nil
}

// Report updates what a running session is doing — its task and progress
// (0..1) — from its work's own progress reports (a job's). It is not a
// transition: the ledger does not record it, but the digest and the
// switchboard.agent.status event show it when the task text changed
// (callers round the progress they put in it, so a chatty job does not
// flood the tabs).
func (a *Agents) Report(ctx context.Context, id, task string, progress float64) {
	if len(task) > maxTask {
		task = task[:maxTask]
	}
	a.mu.Lock()
	st, ok := a.sessions[id]
	if !ok || st.s.Status.Final() {
		a.mu.Unlock()
		return
	}
	st.s.LastSeen = a.now().UTC()
	p := progress
	st.s.Progress = &p
	changed := st.s.Task != task
	st.s.Task = task
	a.markDirtyLocked(id) // written at the next Flush: progress is a hot path
	r := a.recordLocked(st)
	a.mu.Unlock()
	if changed && a.opts.Notify != nil {
		a.opts.Notify(context.WithoutCancel(ctx), r)
	}
}

// End finishes a session (done or cancelled) with a reason. Ending one
// already finished is CONFLICT.
func (a *Agents) End(ctx context.Context, id string, status switchboard.AgentStatus, reason string) (switchboard.AgentSession, error) {
	if !status.Final() {
		return switchboard.AgentSession{}, switchboard.Errorf(switchboard.CodeInvalidInput, "a session ends done or cancelled, not %q", status)
	}
	a.mu.Lock()
	st, err := a.liveLocked(id)
	if err != nil {
		a.mu.Unlock()
		return switchboard.AgentSession{}, err
	}
	from := st.s.Status
	now := a.now().UTC()
	ended := st.s
	ended.Status, ended.Reason, ended.EndedAt, ended.LastSeen = status, reason, now, now
	a.endLocked(st, ended)
	s := st.s
	a.mu.Unlock()
	a.transitioned(ctx, s, from)
	return s, nil
}

// EndedElsewhere is told that session s ended on another replica (its
// status event). A live copy kept here — an external agent's session
// adopted from the replica it reached first — ends with it, so that the
// agent's next request here starts or adopts a live session instead of
// acting in the ended one, and reads here show the end. The store holds
// the end already and its replica announced it: nothing is written or
// announced again.
func (a *Agents) EndedElsewhere(s switchboard.AgentSession) {
	if !s.Status.Final() {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.sessions[s.ID]
	if !ok || st.s.Status.Final() {
		return
	}
	a.endLocked(st, s)
	delete(a.dirty, s.ID) // a queued write would only lose to the stored end
}

// endLocked ends st in memory as ended says (its final status, reason
// and times): the seat it held is given back, its external key freed for
// a new session, and it is kept among the Retain most recently finished.
func (a *Agents) endLocked(st *agentState, ended switchboard.AgentSession) {
	st.s.Status, st.s.Reason, st.s.EndedAt, st.s.LastSeen = ended.Status, ended.Reason, ended.EndedAt, ended.LastSeen
	st.settled = nil // nothing reads it once ended
	if st.release != nil {
		st.release()
	}
	if st.key != "" && a.keys[st.key] == st.s.ID {
		delete(a.keys, st.key)
	}
	a.finished = append(a.finished, st.s.ID)
	a.ended++
	for len(a.finished) > a.opts.Retain {
		delete(a.sessions, a.finished[0])
		a.finished = a.finished[1:]
	}
}

// Heartbeat keeps a registered session alive; only who registered it
// (or the user) may send one.
func (a *Agents) Heartbeat(ctx context.Context, id string, v Viewer) (switchboard.AgentSession, error) {
	a.mu.Lock()
	st, ok := a.sessions[id]
	if !ok {
		a.mu.Unlock()
		return a.heartbeatStored(ctx, id, v) // another replica's, or ended and no longer held
	}
	defer a.mu.Unlock()
	if !v.canSee(st) {
		return switchboard.AgentSession{}, notFound(id)
	}
	if !v.canControl(st) {
		return switchboard.AgentSession{}, switchboard.Errorf(switchboard.CodeForbidden, "only %s or the user may keep agent %s alive", st.s.Principal, id)
	}
	if st.s.Status.Final() {
		return st.s, finished(st.s)
	}
	st.s.LastSeen = a.now().UTC()
	a.markDirtyLocked(id)
	return st.s, nil
}

// Interrupt resolves a session's work to a definite state: its run or job
// is cancelled through its own cancel (which cancels the approval its call
// waits on), the calls in flight on its behalf (Work) are cancelled and
// awaited — a call waiting for approval has that approval cancelled and
// ends CANCELLED — and the session ends cancelled. Interrupting a finished
// session is CONFLICT.
func (a *Agents) Interrupt(ctx context.Context, id string, v Viewer) (switchboard.AgentSession, error) {
	a.mu.Lock()
	st, ok := a.sessions[id]
	if !ok {
		a.mu.Unlock()
		return a.interruptStored(ctx, id, v) // another replica's: relayed to it
	}
	if !v.canSee(st) {
		a.mu.Unlock()
		return switchboard.AgentSession{}, notFound(id)
	}
	if !v.canControl(st) {
		a.mu.Unlock()
		return switchboard.AgentSession{}, switchboard.Errorf(switchboard.CodeForbidden, "%s may not interrupt agent %s", v.Principal, id)
	}
	if st.s.Status.Final() {
		s := st.s
		a.mu.Unlock()
		return s, finished(s)
	}
	st.stopping = true
	stop := st.interrupt
	inflight := make([]*work, 0, len(st.work))
	for _, w := range st.work {
		inflight = append(inflight, w)
	}
	a.mu.Unlock()
	reason := "interrupted by " + v.Principal.String()
	if stop != nil {
		if err := stop(ctx, reason); err != nil && switchboard.CodeOf(err) != switchboard.CodeConflict {
			a.mu.Lock()
			st.stopping = false
			a.mu.Unlock()
			return switchboard.AgentSession{}, err
		}
	}
	cause := switchboard.Errorf(switchboard.CodeCancelled, "agent session %s was %s", id, reason)
	for _, w := range inflight {
		w.cancel(cause)
	}
	a.awaitWork(ctx, inflight)
	s, err := a.End(ctx, id, switchboard.AgentCancelled, reason)
	if switchboard.CodeOf(err) == switchboard.CodeConflict {
		// The work's own end (a run's RUN_FINISHED, cancelled) was recorded
		// first: that is the definite state the interrupt resolved it to.
		return a.Get(ctx, id, v)
	}
	return s, err
}

// awaitWork waits until the cancelled calls have recorded their end,
// bounded by ctx and InterruptWait.
func (a *Agents) awaitWork(ctx context.Context, list []*work) {
	if len(list) == 0 {
		return
	}
	t := time.NewTimer(a.opts.InterruptWait)
	defer t.Stop()
	for _, w := range list {
		select {
		case <-w.done:
		case <-ctx.Done():
			return
		case <-t.C:
			a.log.WarnContext(ctx, "interrupted calls did not end in time", "wait", a.opts.InterruptWait)
			return
		}
	}
}

// Work binds a call made on behalf of session id to it: the returned
// context is cancelled when the session is interrupted, and done must be
// called when the call has ended (recorded). Transports whose work has no
// cancel of its own (an external agent's calls over MCP or HTTP) use it;
// an unknown or finished session binds nothing.
func (a *Agents) Work(ctx context.Context, id string) (context.Context, func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.sessions[id]
	if !ok || st.s.Status.Final() || st.stopping {
		return ctx, func() {}
	}
	wctx, cancel := context.WithCancelCause(ctx)
	a.nextWork++
	n := a.nextWork
	w := &work{cancel: cancel, done: make(chan struct{})}
	st.work[n] = w
	if r, ok := a.wakeLocked(st); ok {
		a.mu.Unlock()
		a.record(ctx, r, "")
		a.mu.Lock()
	}
	var once sync.Once
	return wctx, func() {
		once.Do(func() {
			a.mu.Lock()
			delete(st.work, n)
			a.mu.Unlock()
			close(w.done)
			cancel(nil)
		})
	}
}

// wakeLocked ends a quiet session's quiet (its first work, or a call of
// it waiting for approval): it returns the record of its start, which the
// caller writes to the ledger after unlocking. Caller holds a.mu.
func (a *Agents) wakeLocked(st *agentState) (switchboard.AgentRecord, bool) {
	if !st.quiet {
		return switchboard.AgentRecord{}, false
	}
	st.quiet = false
	return switchboard.AgentRecord{Session: st.s, User: st.user, Replica: a.opts.Replica}, true
}

// Park records that a session's work stopped while calls of it wait for
// approvals (an assistant run that ended with interrupts): it stays
// waiting_approval while any of them is pending, can be interrupted (which
// cancels them through its Interrupt), and ends done with reason once the
// last is answered. With none pending it ends done now.
func (a *Agents) Park(ctx context.Context, id string, approvals []string, reason string) {
	a.mu.Lock()
	st, ok := a.sessions[id]
	if !ok || st.s.Status.Final() {
		a.mu.Unlock()
		return
	}
	for _, apr := range approvals {
		if !st.settled[apr] {
			st.approvals[apr] = true
		}
	}
	st.parked = reason
	st.base = switchboard.AgentIdle
	from := st.s.Status
	a.settleLocked(st)
	s, idle := st.s, len(st.approvals) == 0 && !st.stopping
	a.mu.Unlock()
	if idle {
		_, _ = a.End(ctx, id, switchboard.AgentDone, reason)
		return
	}
	if s.Status != from {
		a.transitioned(ctx, s, from)
	}
}

// Get returns one session the viewer may see, whichever replica owns it;
// AGENT_NOT_FOUND otherwise.
func (a *Agents) Get(ctx context.Context, id string, v Viewer) (switchboard.AgentSession, error) {
	a.mu.Lock()
	st, ok := a.sessions[id]
	var s switchboard.AgentSession
	if ok {
		s, ok = st.s, v.canSee(st)
	}
	a.mu.Unlock()
	if st == nil {
		r, err := a.stored(ctx, id)
		if err != nil {
			return switchboard.AgentSession{}, err
		}
		s, ok = r.Session, v.canSee(stateOf(r))
	}
	if !ok {
		return switchboard.AgentSession{}, notFound(id)
	}
	return s, nil
}

// Filter selects sessions; empty fields match all.
type Filter struct {
	Kind      switchboard.AgentKind
	Status    switchboard.AgentStatus
	SessionID string
	// Active leaves out finished sessions.
	Active bool
}

// List returns the sessions the viewer may see, newest first: with a
// Store, every replica's (this replica's own as its memory has them, the
// others' as stored); if the store cannot be read, this replica's alone.
func (a *Agents) List(ctx context.Context, v Viewer, f Filter) []switchboard.AgentSession {
	var recs []switchboard.AgentRecord
	if a.opts.Store != nil {
		var err error
		if recs, err = a.opts.Store.AgentList(ctx, switchboard.AgentFilter{Active: f.Active}); err != nil {
			a.log.WarnContext(ctx, "list agent sessions of other replicas", "err", err)
		}
	}
	a.mu.Lock()
	all := make(map[string]*agentState, len(a.sessions)+len(recs))
	for id, st := range a.sessions {
		all[id] = st
	}
	for _, r := range recs {
		if st, ok := all[r.Session.ID]; !ok || (r.Session.Status.Final() && !st.s.Status.Final()) {
			all[r.Session.ID] = stateOf(r) // another replica's, or ended by the one that took this one over
		}
	}
	out := make([]switchboard.AgentSession, 0, len(all))
	for _, st := range all {
		s := st.s
		if !v.canSee(st) || (f.Kind != "" && s.Kind != f.Kind) || (f.Status != "" && s.Status != f.Status) ||
			(f.SessionID != "" && s.SessionID != f.SessionID) || (f.Active && s.Status.Final()) {
			continue
		}
		out = append(out, s)
	}
	a.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.After(out[j].StartedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// ByRun returns the session of an assistant run.
func (a *Agents) ByRun(runID string) (switchboard.AgentSession, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range a.sessions {
		if st.s.RunID == runID && st.s.Kind == switchboard.AgentChat {
			return st.s, true
		}
	}
	return switchboard.AgentSession{}, false
}

// RunsFor returns the assistant runs of this replica's live chat sessions
// acting for user ("user:alice"): the run streams a status event of that
// user's agents reaches here.
func (a *Agents) RunsFor(user string) []string {
	user = userOf(user)
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, st := range a.sessions {
		if st.s.Kind == switchboard.AgentChat && st.s.RunID != "" && !st.s.Status.Final() && st.user == user {
			out = append(out, st.s.RunID)
		}
	}
	return out
}

// Holder returns who session id's panel leases belong to (Spec.Holder),
// or "" when it holds them itself or is unknown.
func (a *Agents) Holder(id string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, ok := a.sessions[id]; ok {
		return st.holder
	}
	return ""
}

// ByJob returns the id of the background session of job jobID.
func (a *Agents) ByJob(jobID string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, st := range a.sessions {
		if st.s.JobID == jobID && st.s.Kind == switchboard.AgentBackground {
			return id, true
		}
	}
	return "", false
}

// Sweep ends registered sessions whose heartbeats stopped and external
// sessions idle past the window, as of now; it returns how many. The
// daemon calls it on a ticker; tests call it with an injected clock.
func (a *Agents) Sweep(ctx context.Context) int {
	now := a.now().UTC()
	beat := a.opts.HeartbeatInterval * time.Duration(a.opts.MissedHeartbeats)
	type due struct {
		id, reason string
		beat       bool
		// stale: a request another replica recorded after it keeps the
		// session (zero: none is looked for).
		stale time.Time
	}
	var list []due
	a.mu.Lock()
	for id, st := range a.sessions {
		if st.s.Status.Final() {
			continue
		}
		quiet := now.Sub(st.s.LastSeen)
		switch {
		case st.heartbeat && quiet >= beat:
			list = append(list, due{id, "missed heartbeats: none for " + quiet.Round(time.Second).String() + " (interval " + a.opts.HeartbeatInterval.String() + ")", true, now.Add(-beat)})
		case st.idle && len(st.approvals) == 0 && len(st.work) == 0 && quiet >= a.opts.IdleTimeout:
			d := due{id, "idle: no request for " + quiet.Round(time.Second).String(), false, time.Time{}}
			if st.key != "" { // one session across replicas: its requests may reach another
				d.stale = now.Add(-a.opts.IdleTimeout)
			}
			list = append(list, d)
		}
	}
	a.mu.Unlock()
	n := 0
	for _, d := range list {
		if !d.stale.IsZero() && a.beatElsewhere(ctx, d.id, d.stale) {
			continue
		}
		if _, err := a.End(ctx, d.id, switchboard.AgentDone, d.reason); err == nil {
			n++
		}
	}
	a.mu.Lock()
	pruneNow := a.ended > 0
	a.ended = 0
	a.mu.Unlock()
	if pruneNow {
		a.prune(ctx)
	}
	return n
}

// beatElsewhere reports whether a heartbeat of session id that another
// replica recorded in the store is newer than stale; if so the session's
// memory takes it.
func (a *Agents) beatElsewhere(ctx context.Context, id string, stale time.Time) bool {
	seen, ok := a.seenElsewhere(ctx, id)
	if !ok || !seen.After(stale) {
		return false
	}
	a.mu.Lock()
	if st := a.sessions[id]; st != nil && seen.After(st.s.LastSeen) {
		st.s.LastSeen = seen
	}
	a.mu.Unlock()
	return true
}

// Run calls Sweep every interval, and with a Store Flush every
// FlushInterval, until ctx ends; then it flushes once more.
func (a *Agents) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var flush <-chan time.Time
	if a.opts.Store != nil {
		f := time.NewTicker(a.opts.FlushInterval)
		defer f.Stop()
		flush = f.C
	}
	for {
		select {
		case <-ctx.Done():
			a.Flush(context.WithoutCancel(ctx))
			return
		case <-t.C:
			a.Sweep(ctx)
		case <-flush:
			a.Flush(ctx)
		}
	}
}

// ApprovalPending records that a call by agent session id waits on
// approval apr: the session shows waiting_approval until it is settled.
// The daemon feeds it from the approval service's events, so nothing in
// the loop threads it through. An unknown or finished session is ignored.
func (a *Agents) ApprovalPending(ctx context.Context, id, apr string) {
	a.approvalChange(ctx, id, apr, true)
}

// ApprovalSettled records that approval apr no longer waits.
func (a *Agents) ApprovalSettled(ctx context.Context, id, apr string) {
	a.approvalChange(ctx, id, apr, false)
}

// ApprovalCancelled records that approval apr was cancelled (its caller
// stopped waiting: a cancelled run, an interrupt): a parked session whose
// calls were cancelled ends cancelled, not done.
func (a *Agents) ApprovalCancelled(ctx context.Context, id, apr string) {
	a.mu.Lock()
	if st, ok := a.sessions[id]; ok && !st.s.Status.Final() {
		st.cancelled = true
	}
	a.mu.Unlock()
	a.approvalChange(ctx, id, apr, false)
}

func (a *Agents) approvalChange(ctx context.Context, id, apr string, pending bool) {
	a.mu.Lock()
	if !pending {
		a.withdrawLocked(apr) // whatever became of the agent session
	}
	st, ok := a.sessions[id]
	if !ok || st.s.Status.Final() {
		a.mu.Unlock()
		return
	}
	if pending {
		if !st.settled[apr] {
			st.approvals[apr] = true
		}
		if r, ok := a.wakeLocked(st); ok {
			a.mu.Unlock()
			a.record(ctx, r, "")
			a.mu.Lock()
			if st.s.Status.Final() {
				a.mu.Unlock()
				return
			}
		}
	} else {
		delete(st.approvals, apr)
		st.settled[apr] = true
	}
	st.s.LastSeen = a.now().UTC()
	from := st.s.Status
	a.settleLocked(st)
	s, parked, cancelled := st.s, st.parked, st.cancelled
	end := parked != "" && len(st.approvals) == 0 && !st.stopping
	a.mu.Unlock()
	if end {
		if cancelled {
			_, _ = a.End(ctx, id, switchboard.AgentCancelled, parked+"; its waiting calls were cancelled")
			return
		}
		_, _ = a.End(ctx, id, switchboard.AgentDone, parked+"; its approvals were answered")
		return
	}
	if s.Status != from {
		a.transitioned(ctx, s, from)
	}
}

// settleLocked derives the shown status from the base and the approvals.
func (a *Agents) settleLocked(st *agentState) {
	if len(st.approvals) > 0 {
		st.s.Status = switchboard.AgentWaitingApproval
	} else {
		st.s.Status = st.base
	}
}

// Escalated reports whether approval apr waits for a background or
// external agent: the digest flags it, the user's tabs show its card and
// the focused assistant is told.
func (a *Agents) Escalated(apr string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range a.sessions {
		if st.approvals[apr] && escalates(st.s.Kind) {
			return true
		}
	}
	return false
}

// escalates: the kinds whose approvals no chat in front of the user asks
// about by itself.
func escalates(k switchboard.AgentKind) bool {
	return k == switchboard.AgentBackground || k == switchboard.AgentExternal
}

// UserOf returns the user a session acts for ("user:alice").
func (a *Agents) UserOf(id string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.sessions[id]
	if !ok {
		return "", false
	}
	return st.user, true
}

// transitioned stores a transition of this replica's session s, then
// announces it.
func (a *Agents) transitioned(ctx context.Context, s switchboard.AgentSession, from switchboard.AgentStatus) {
	a.mu.Lock()
	st := a.sessions[s.ID]
	r := switchboard.AgentRecord{Session: s, Replica: a.opts.Replica}
	quiet := false
	if st != nil {
		r.User, r.Heartbeat, quiet = st.user, st.heartbeat, st.quiet
	}
	a.mu.Unlock()
	if st != nil {
		a.persist(ctx, st)
	}
	if !quiet {
		a.record(ctx, r, from)
	}
	if a.opts.Notify != nil {
		a.opts.Notify(context.WithoutCancel(ctx), r)
	}
}

// announce writes the ledger entry of a transition and tells Notify.
func (a *Agents) announce(ctx context.Context, r switchboard.AgentRecord, from switchboard.AgentStatus) {
	a.record(ctx, r, from)
	if a.opts.Notify != nil {
		a.opts.Notify(context.WithoutCancel(ctx), r)
	}
}

// record writes the ledger entry of a transition.
func (a *Agents) record(ctx context.Context, r switchboard.AgentRecord, from switchboard.AgentStatus) {
	s := r.Session
	wctx := context.WithoutCancel(ctx)
	if a.opts.Ledger != nil {
		details, _ := json.Marshal(map[string]any{
			"agentId": s.ID, "kind": s.Kind, "status": s.Status, "from": from, "task": s.Task, "reason": s.Reason,
			"transport": s.Transport, "sessionId": s.SessionID, "runId": s.RunID, "jobId": s.JobID,
		})
		e := &switchboard.ActivityEntry{Ts: a.now().UTC(), Actor: s.Principal, Verb: activity.VerbAgentStatus, Target: s.ID, Details: details}
		if err := a.opts.Ledger.Append(wctx, e); err != nil {
			a.log.WarnContext(ctx, "record agent status", "agent", s.ID, "status", s.Status, "err", err)
		}
	}
}

func (a *Agents) liveLocked(id string) (*agentState, error) {
	st, ok := a.sessions[id]
	if !ok {
		return nil, notFound(id)
	}
	if st.s.Status.Final() {
		return nil, finished(st.s)
	}
	return st, nil
}

func notFound(id string) error {
	return switchboard.Errorf(switchboard.CodeAgentNotFound, "no agent session %q; list them with GET /api/v1/agents or `switchboard agents`", id).
		WithDetails(map[string]any{"agentId": id})
}

func finished(s switchboard.AgentSession) error {
	return switchboard.Errorf(switchboard.CodeConflict, "agent %s already ended %s (%s)", s.ID, s.Status, s.Reason).
		WithDetails(map[string]any{"agentId": s.ID, "status": s.Status})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Lister reads, for a digest, the agent sessions at work that its reader
// may see: the user's when the reader is bound to one (a tab, the
// assistant running in a tab), else what the reader's principal may see
// (access.go).
func (a *Agents) Lister() AgentLister { return agentsLister{a} }

type agentsLister struct{ a *Agents }

func (l agentsLister) List(ctx context.Context) ([]switchboard.AgentSession, error) {
	var v Viewer
	if u := viewerUser(ctx); u != "" {
		v = TabViewer("", u)
	} else if p, ok := switchboard.PrincipalFrom(ctx); ok {
		v = ViewerOf(p)
	}
	return l.a.List(ctx, v, Filter{Active: true}), nil
}

// Active counts the agent sessions this replica holds that have not
// ended (the metrics' agent-sessions gauge).
func (a *Agents) Active() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, st := range a.sessions {
		if !st.s.Status.Final() {
			n++
		}
	}
	return n
}
