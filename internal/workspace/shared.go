package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Several replicas on one store: the registry keeps its own sessions —
// the ones whose work runs in this process — in memory, as it always did,
// and writes each of them through to the store with this replica as its
// owner (AgentsOptions.Store, .Replica). Reads (Get, List, the digest,
// access checks) see every replica's sessions: their own from memory, the
// others' from the store. A heartbeat landing on another replica is
// recorded in the store, where the owner's sweep reads it before ending a
// silent session; an interrupt landing on another replica is relayed to
// the owner (AgentsOptions.Relay), as is a handoff to it, which cancels the work it holds. When
// a replica dies, the survivor that takes it over ends its sessions
// (EndOwned). See docs/agents.md ("Several replicas").

// DefaultFlushInterval is how often coalesced updates — a session's last
// request, a job's progress — are written to the store: the hot paths
// that report them (every call of an external agent, a chatty job) do
// not write.
const DefaultFlushInterval = time.Second

// AgentStore is where a registry shared by several replicas keeps its
// sessions (switchboard.Store).
type AgentStore interface {
	AgentPut(ctx context.Context, r switchboard.AgentRecord) error
	AgentGet(ctx context.Context, id string) (switchboard.AgentRecord, error)
	AgentList(ctx context.Context, f switchboard.AgentFilter) ([]switchboard.AgentRecord, error)
	AgentTouch(ctx context.Context, id string, at time.Time) (switchboard.AgentRecord, error)
	AgentPrune(ctx context.Context, keep int) (int, error)
}

// AgentAdopter is an AgentStore that keeps an external agent one session
// across replicas (switchboard stores on SQL do): AgentAdopt stores a new
// session under its key, or returns the live one already holding it.
type AgentAdopter interface {
	AgentAdopt(ctx context.Context, r switchboard.AgentRecord, key string) (switchboard.AgentRecord, bool, error)
}

// Relay reaches the replica that owns a session (rec.Replica) for what
// only its memory can do; the daemon carries it over the bus.
type Relay interface {
	// Interrupt asks the owner to interrupt rec for v (InterruptLocal
	// there) and returns the owner's answer.
	Interrupt(ctx context.Context, rec switchboard.AgentRecord, v Viewer) (switchboard.AgentSession, error)
	// Handoff asks the owner to keep handoff h in rec's inbox
	// (DeliverLocal there).
	Handoff(ctx context.Context, rec switchboard.AgentRecord, h switchboard.AgentHandoff) error
}

// recordLocked is st as the store keeps it.
func (a *Agents) recordLocked(st *agentState) switchboard.AgentRecord {
	return switchboard.AgentRecord{Session: st.s, User: st.user, Replica: a.opts.Replica, Heartbeat: st.heartbeat}
}

// stateOf is a stored record as the access rules read it.
func stateOf(r switchboard.AgentRecord) *agentState {
	return &agentState{s: r.Session, user: r.User, heartbeat: r.Heartbeat}
}

// persist writes st's current state to the store. Writes of one session
// are serialised and each writes the state as of its turn, so the last
// write holds the latest state whatever order transitions raced in.
func (a *Agents) persist(ctx context.Context, st *agentState) {
	if a.opts.Store == nil {
		return
	}
	st.wmu.Lock()
	defer st.wmu.Unlock()
	a.mu.Lock()
	rec := a.recordLocked(st)
	delete(a.dirty, rec.Session.ID)
	a.mu.Unlock()
	err := a.opts.Store.AgentPut(context.WithoutCancel(ctx), rec)
	switch {
	case err == nil:
	case switchboard.CodeOf(err) == switchboard.CodeConflict:
		// A survivor ended it: this replica was taken over while it ran,
		// and the stored end stands; memory takes it.
		a.log.WarnContext(ctx, "agent session was ended by the replica that took this one over", "agent", rec.Session.ID)
		if r, err := a.opts.Store.AgentGet(context.WithoutCancel(ctx), rec.Session.ID); err == nil && r.Session.Status.Final() {
			a.mu.Lock()
			if !st.s.Status.Final() {
				a.endLocked(st, r.Session)
			}
			a.mu.Unlock()
		}
	default:
		a.log.WarnContext(ctx, "store agent session; retrying at the next flush", "agent", rec.Session.ID, "err", err)
		a.mu.Lock()
		a.dirty[rec.Session.ID] = true
		a.mu.Unlock()
	}
}

// markDirtyLocked queues st's coalesced write (Flush).
func (a *Agents) markDirtyLocked(id string) {
	if a.opts.Store != nil {
		a.dirty[id] = true
	}
}

// Flush writes the sessions whose last request or progress changed since
// their last write. Run calls it every FlushInterval and once when it
// stops.
func (a *Agents) Flush(ctx context.Context) {
	a.mu.Lock()
	list := make([]*agentState, 0, len(a.dirty))
	for id := range a.dirty {
		if st, ok := a.sessions[id]; ok {
			list = append(list, st)
		} else {
			delete(a.dirty, id)
		}
	}
	a.mu.Unlock()
	for _, st := range list {
		a.persist(ctx, st)
	}
}

// stored reads session id from the store (AGENT_NOT_FOUND without one).
func (a *Agents) stored(ctx context.Context, id string) (switchboard.AgentRecord, error) {
	if a.opts.Store == nil {
		return switchboard.AgentRecord{}, notFound(id)
	}
	r, err := a.opts.Store.AgentGet(ctx, id)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		return r, notFound(id)
	}
	return r, err
}

// Owns reports whether session id is this replica's: its work runs here.
func (a *Agents) Owns(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.sessions[id]
	return ok
}

// heartbeatStored records a heartbeat of a session another replica owns.
func (a *Agents) heartbeatStored(ctx context.Context, id string, v Viewer) (switchboard.AgentSession, error) {
	r, err := a.stored(ctx, id)
	if err != nil {
		return switchboard.AgentSession{}, err
	}
	st := stateOf(r)
	if !v.canSee(st) {
		return switchboard.AgentSession{}, notFound(id)
	}
	if !v.canControl(st) {
		return switchboard.AgentSession{}, switchboard.Errorf(switchboard.CodeForbidden, "only %s or the user may keep agent %s alive", r.Session.Principal, id)
	}
	if r.Session.Status.Final() {
		return r.Session, finished(r.Session)
	}
	r, err = a.opts.Store.AgentTouch(ctx, id, a.now().UTC())
	if switchboard.CodeOf(err) == switchboard.CodeConflict {
		return r.Session, finished(r.Session)
	}
	return r.Session, err
}

// interruptStored interrupts a session another replica owns, through that
// replica (AgentsOptions.Relay).
func (a *Agents) interruptStored(ctx context.Context, id string, v Viewer) (switchboard.AgentSession, error) {
	r, err := a.stored(ctx, id)
	if err != nil {
		return switchboard.AgentSession{}, err
	}
	st := stateOf(r)
	if !v.canSee(st) {
		return switchboard.AgentSession{}, notFound(id)
	}
	if !v.canControl(st) {
		return switchboard.AgentSession{}, switchboard.Errorf(switchboard.CodeForbidden, "%s may not interrupt agent %s", v.Principal, id)
	}
	if r.Session.Status.Final() {
		return r.Session, finished(r.Session)
	}
	if a.opts.Relay == nil || r.Replica == a.opts.Replica {
		return switchboard.AgentSession{}, switchboard.Errorf(switchboard.CodeUnavailable,
			"agent %s runs on replica %s, which this replica cannot reach (no cross-replica bus); send the interrupt to that replica", id, r.Replica)
	}
	return a.opts.Relay.Interrupt(ctx, r, v)
}

// InterruptLocal is Interrupt for a session this replica owns (the owner's
// side of a relayed interrupt): a session it does not hold is answered
// from the store — CONFLICT once ended — and never relayed again.
func (a *Agents) InterruptLocal(ctx context.Context, id string, v Viewer) (switchboard.AgentSession, error) {
	if a.Owns(id) {
		return a.Interrupt(ctx, id, v)
	}
	r, err := a.stored(ctx, id)
	if err != nil {
		return switchboard.AgentSession{}, err
	}
	if !v.canSee(stateOf(r)) {
		return switchboard.AgentSession{}, notFound(id)
	}
	if r.Session.Status.Final() {
		return r.Session, finished(r.Session)
	}
	return switchboard.AgentSession{}, switchboard.Errorf(switchboard.CodeUnavailable, "agent %s is not running on this replica", id)
}

// EndOwned ends the live sessions that replicas owners owned (they
// stopped or died, and their work with them): each ends cancelled with
// reason in the store, with its ledger entry and its status event, unless
// something ended it first. It returns how many it ended. The start-up
// sweep and a survivor's takeover call it, so lists show no session whose
// replica is gone.
func (a *Agents) EndOwned(ctx context.Context, owners []string, reason string) (int, error) {
	if a.opts.Store == nil || len(owners) == 0 {
		return 0, nil
	}
	recs, err := a.opts.Store.AgentList(ctx, switchboard.AgentFilter{Active: true, Replicas: owners})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		if r.Replica == a.opts.Replica && a.opts.Replica != "" {
			continue // this start's own: alive
		}
		from := r.Session.Status
		now := a.now().UTC()
		r.Session.Status, r.Session.Reason, r.Session.EndedAt = switchboard.AgentCancelled, reason, now
		if err := a.opts.Store.AgentPut(ctx, r); err != nil {
			if switchboard.CodeOf(err) == switchboard.CodeConflict {
				continue
			}
			return n, err
		}
		a.announce(ctx, r, from)
		n++
	}
	if n > 0 {
		a.prune(ctx)
	}
	return n, nil
}

// prune keeps the store's ended sessions to Retain.
func (a *Agents) prune(ctx context.Context) {
	if a.opts.Store == nil {
		return
	}
	if _, err := a.opts.Store.AgentPrune(ctx, a.opts.Retain); err != nil {
		a.log.WarnContext(ctx, "prune ended agent sessions", "err", err)
	}
}

// seenElsewhere returns the last heartbeat the store holds for session
// id, which another replica may have recorded.
func (a *Agents) seenElsewhere(ctx context.Context, id string) (time.Time, bool) {
	if a.opts.Store == nil {
		return time.Time{}, false
	}
	r, err := a.opts.Store.AgentGet(ctx, id)
	if err != nil {
		return time.Time{}, false
	}
	return r.Session.LastSeen, true
}

// adoptExternal makes the session of an external agent's key (sp) the one
// stored: it stores a new session under the key, or, when another replica
// the agent reached first holds a live one, adopts that one, which this
// replica then keeps in memory beside it (the agent's calls here are its
// work here; whichever replica writes last is the owner an interrupt is
// relayed to). ok false: no store keeps keys, or it failed; start one here.
func (a *Agents) adoptExternal(ctx context.Context, sp Spec, key string, now time.Time) (string, bool) {
	ad, ok := a.opts.Store.(AgentAdopter)
	if a.opts.Store == nil || !ok {
		return "", false
	}
	st, err := a.newState(sp)
	if err != nil {
		return "", false
	}
	st.quiet, st.key = true, key
	a.mu.Lock()
	rec := a.recordLocked(st)
	a.mu.Unlock()
	sum := sha256.Sum256([]byte(key)) // the key holds NULs; stored as its digest
	stored, adopted, err := ad.AgentAdopt(context.WithoutCancel(ctx), rec, hex.EncodeToString(sum[:]))
	if err != nil {
		a.log.WarnContext(ctx, "store external agent session; kept by this replica only", "err", err)
		return "", false
	}
	if adopted {
		st.s, st.quiet = stored.Session, false
		st.s.LastSeen = now
	}
	a.mu.Lock()
	if id, ok := a.keys[key]; ok && a.sessions[id] != nil && !a.sessions[id].s.Status.Final() {
		a.mu.Unlock()
		return id, true // a concurrent first call here won (it stored or adopted the same key)
	}
	a.sessions[st.s.ID] = st
	a.keys[key] = st.s.ID
	if adopted {
		a.markDirtyLocked(st.s.ID)
	}
	s := st.s
	a.mu.Unlock()
	if !adopted {
		a.transitioned(ctx, s, "")
	}
	return s.ID, true
}
