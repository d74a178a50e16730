package session

import (
	"context"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/registry"
)

// Advertise replaces the browser tools session id offers (the PUSH): all or
// nothing, validated like registry declarations, with the exemption
// enforced (a browser tool must assert viewStateOnly and may only be read or
// ui: EXEMPTION_VIOLATION otherwise), and no tool under the name of a
// catalog api tool (Options.Catalog: CONFLICT). An empty list withdraws
// every tool.
//
// The advertisement is stored with the session and announced on the bus,
// so the replica holding the tab's stream (or attaching it later) serves
// exactly these tools wherever the PUSH landed.
func (m *Manager) Advertise(ctx context.Context, id string, tools []switchboard.Tool) ([]switchboard.Tool, error) {
	defer m.watch.notify()
	if len(tools) > m.opts.MaxTools {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "a tab may advertise at most %d tools, not %d", m.opts.MaxTools, len(tools))
	}
	tools = slices.Clone(tools)
	for i := range tools {
		switch tools[i].Surface {
		case "":
			tools[i].Surface = switchboard.SurfaceBrowser
		case switchboard.SurfaceBrowser:
		default:
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput,
				"tool %s: a tab advertises browser tools only (surface %q); register api tools with POST /api/v1/tools", tools[i].Name, tools[i].Surface)
		}
	}
	fresh := make([]*liveTool, len(tools))
	decls := make([]switchboard.Tool, len(tools))
	if len(tools) > 0 {
		if err := registry.CheckBatch(tools); err != nil {
			return nil, err
		}
		if m.opts.Catalog != nil {
			if err := m.opts.Catalog.CheckAdvertised(ctx, tools); err != nil {
				return nil, err
			}
		}
		for i, t := range tools {
			lt, err := m.compile(t)
			if err != nil {
				return nil, err
			}
			fresh[i], decls[i] = lt, lt.tool
		}
	}
	m.mu.Lock()
	st, closed := m.sessions[id], m.closed
	m.mu.Unlock()
	if closed {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "the daemon is shutting down")
	}
	if st != nil {
		st.reload.Lock()
		defer st.reload.Unlock()
	}
	if err := m.store.SessionAdvertise(ctx, id, decls, m.opts.Now()); err != nil {
		return nil, err
	}
	// With no state here to apply it to, the announcement names no
	// replica, so that a state this replica is creating right now — whose
	// read of the store may precede the write above — reloads too.
	from := m.replica
	if st == nil {
		from = ""
	}
	m.publishTools(id, from)
	if st == nil {
		// The tab's stream is on another replica (which reloads the stored
		// advertisement when told) or not attached yet (it is loaded then).
		out := make([]switchboard.Tool, len(fresh))
		for i, lt := range fresh {
			out[i] = withOrigin(id, lt)
		}
		slices.SortFunc(out, func(a, b switchboard.Tool) int { return strings.Compare(a.Name, b.Name) })
		return out, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.ended {
		return nil, switchboard.Errorf(switchboard.CodeSessionGone, "session %s ended; connect again", id)
	}
	st.mu.Lock()
	st.seen = m.opts.Now()
	st.mu.Unlock()
	m.setToolsLocked(st, fresh)
	return st.listLocked(), nil
}

// compile returns the shared entry of a checked declaration, compiling it
// when no session holds it yet (no lock held: compiling is slow).
func (m *Manager) compile(t switchboard.Tool) (*liveTool, error) {
	key, err := keyOf(t)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	have := m.shared[key]
	m.mu.Unlock()
	if have != nil {
		return have, nil
	}
	return compileTool(key, t)
}

// compileStored compiles a stored advertisement, skipping (and logging) a
// tool that no longer compiles: it was checked when it was advertised.
func (m *Manager) compileStored(id string, tools []switchboard.Tool) []*liveTool {
	out := make([]*liveTool, 0, len(tools))
	for _, t := range tools {
		lt, err := m.compile(t)
		if err != nil {
			m.log.Warn("a stored browser tool does not compile", "session", id, "tool", t.Name, "err", err)
			continue
		}
		out = append(out, lt)
	}
	return out
}

// setToolsLocked makes fresh st's tools. Caller holds m.mu.
func (m *Manager) setToolsLocked(st *state, fresh []*liveTool) {
	m.unindexLocked(st)
	m.releaseLocked(st)
	st.tools = make(map[string]*liveTool, len(fresh))
	for _, lt := range fresh {
		st.tools[lt.tool.Name] = m.retainLocked(lt)
		if m.byTool[lt.tool.Name] == nil {
			m.byTool[lt.tool.Name] = map[string]*state{}
		}
		m.byTool[lt.tool.Name][st.id] = st
	}
}

// publishTools tells the replica holding session id's stream that its
// stored advertisement changed; from is the replica that already applied
// it to the stream it holds ("" when none did), which need not reload.
func (m *Manager) publishTools(id, from string) {
	if err := m.bus.Publish(context.Background(), topicDispatch(id), encodeDispatch(msgTools, from, nil)); err != nil {
		m.log.Warn("the replica holding the tab's stream is not told of its new tools", "session", id, "err", err)
	}
}

// reload replaces st's tools with the advertisement stored for it (another
// replica took the PUSH).
func (m *Manager) reload(st *state) {
	st.reload.Lock()
	defer st.reload.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), finalizeTimeout)
	defer cancel()
	s, err := m.store.SessionGet(ctx, st.id)
	if err != nil {
		m.log.Warn("reload the tab's advertisement", "session", st.id, "err", err)
		return
	}
	fresh := m.compileStored(st.id, s.Tools)
	m.mu.Lock()
	if st.ended || m.sessions[st.id] != st {
		m.mu.Unlock()
		return
	}
	m.setToolsLocked(st, fresh)
	m.mu.Unlock()
	m.watch.notify()
}

// unindexLocked removes st's tools from the by-tool index. Caller holds m.mu.
func (m *Manager) unindexLocked(st *state) {
	for name := range st.tools {
		if set := m.byTool[name]; set != nil {
			delete(set, st.id)
			if len(set) == 0 {
				delete(m.byTool, name)
			}
		}
	}
}

// Tools returns the live browser tools session id advertises: none while
// its tab is neither connected nor reconnecting (the tools a call naming
// the session can reach). NOT_FOUND for an unknown session, SESSION_GONE
// for a closed one.
func (m *Manager) Tools(ctx context.Context, id string) ([]switchboard.Tool, error) {
	m.mu.Lock()
	st := m.sessions[id]
	if st != nil && st.reachable() {
		out := st.listLocked()
		m.mu.Unlock()
		return out, nil
	}
	if rt := m.remoteLocked(id); rt != nil && rt.waiting {
		out := rt.list(id)
		m.mu.Unlock()
		return out, nil
	}
	m.mu.Unlock()
	s, err := m.store.SessionGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if !s.ClosedAt.IsZero() {
		return nil, switchboard.Errorf(switchboard.CodeSessionGone, "session %s was closed", id)
	}
	return []switchboard.Tool{}, nil
}

// BindRun makes session the default target of browser calls in run (the
// agent loop binds a chat run to the tab it came from). Explicit sessionId
// on a call still wins. A tab whose stream another replica holds is bound
// too (its announcement, or the store if that has not arrived yet): the
// run's calls go to it there, over the bus, like a call naming it.
func (m *Manager) BindRun(run, session string) {
	if run == "" || session == "" {
		return
	}
	m.mu.Lock()
	if st := m.sessions[session]; st != nil && !st.ended {
		m.bindLocked(run, st)
		m.mu.Unlock()
		return
	}
	remote := m.fresh(m.remote[session])
	m.mu.Unlock()
	if !remote {
		ctx, cancel := context.WithTimeout(context.Background(), finalizeTimeout)
		defer cancel()
		if !m.streamElsewhere(ctx, session) {
			return // no tab anywhere: the run's calls choose one as unbound calls do
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.sessions[session]; st != nil && !st.ended {
		m.bindLocked(run, st) // attached here meanwhile
		return
	}
	m.bindElsewhereLocked(run, session)
}

func (m *Manager) bindLocked(run string, st *state) {
	if m.runs[run] == st.id {
		return
	}
	m.runs[run] = st.id
	st.runs = append(st.runs, run)
	if len(st.runs) > maxRunsPerSession {
		old := st.runs[0]
		st.runs = st.runs[1:]
		if m.runs[old] == st.id {
			delete(m.runs, old)
		}
	}
}

// bindElsewhereLocked binds run to session id, whose tab another replica
// holds. Such bindings have no state to be dropped with, so the newest
// maxRunsElsewhere are kept. Caller holds m.mu.
func (m *Manager) bindElsewhereLocked(run, id string) {
	if m.runs[run] == id {
		return
	}
	m.runs[run] = id
	if !slices.Contains(m.runsElsewhere, run) {
		m.runsElsewhere = append(m.runsElsewhere, run)
	}
	if len(m.runsElsewhere) <= maxRunsElsewhere {
		return
	}
	old := m.runsElsewhere[0]
	m.runsElsewhere = m.runsElsewhere[1:]
	sid := m.runs[old]
	if st := m.sessions[sid]; st == nil || !slices.Contains(st.runs, old) {
		delete(m.runs, old) // unless a state of the tab here took it over
	}
}

// Resolve picks the tab for a call of tool: sessionID when given, else the
// session bound to runID (either may be reconnecting: the call delivered
// to it waits within the reconnect window), else the only connected tab advertising
// tool; only when no tab advertising it is connected does a single
// reconnecting one take the call. It implements broker.Browser.
func (m *Manager) Resolve(ctx context.Context, tool, sessionID, runID string, visible func(switchboard.Tool) bool) (broker.Target, error) {
	if visible == nil {
		visible = func(switchboard.Tool) bool { return true }
	}
	return m.resolve(ctx, tool, sessionID, runID, visible, true)
}

// resolve is Resolve; wait lets a call naming a tab that the store says is
// attached to another replica wait (once, at most attachWait) for that
// replica's announcement.
func (m *Manager) resolve(ctx context.Context, tool, sessionID, runID string, visible func(switchboard.Tool) bool, wait bool) (broker.Target, error) {
	named := sessionID
	m.mu.Lock()
	explicit := sessionID != ""
	if !explicit && runID != "" {
		sessionID = m.runs[runID]
		if sessionID == "" && len(m.remote) > 0 {
			m.mu.Unlock()
			sessionID = m.storedRunTab(ctx, runID)
			m.mu.Lock()
		}
	}
	if sessionID != "" {
		if rt := m.remoteLocked(sessionID); rt != nil && rt.waiting {
			tg, err := remoteResolve(sessionID, rt, tool, visible)
			if err == nil && explicit && runID != "" {
				m.bindElsewhereLocked(runID, sessionID)
			}
			m.mu.Unlock()
			if err != nil {
				if stored, ok := m.storedTarget(ctx, sessionID, tool, visible); ok {
					return stored, nil
				}
			}
			return tg, err
		}
		st := m.sessions[sessionID]
		if st == nil || !st.reachable() {
			down := st != nil && st.kept()
			m.mu.Unlock()
			if down {
				return broker.Target{}, m.errOffline(sessionID)
			}
			elsewhere, err := m.notLive(ctx, sessionID)
			if elsewhere && wait && m.awaitPresence(ctx, sessionID) {
				return m.resolve(ctx, tool, named, runID, visible, false)
			}
			return broker.Target{}, err
		}
		lt := st.tools[tool]
		if lt != nil && !visible(lt.tool) {
			lt = nil
		}
		if lt == nil {
			names := make([]string, 0, len(st.tools))
			for name, t := range st.tools {
				if visible(t.tool) {
					names = append(names, name)
				}
			}
			slices.Sort(names)
			m.mu.Unlock()
			if stored, ok := m.storedTarget(ctx, sessionID, tool, visible); ok {
				return stored, nil
			}
			return broker.Target{}, switchboard.Errorf(switchboard.CodeToolUnavailable,
				"session %s does not advertise the browser tool %s (it has: %s)", sessionID, tool, listOrNone(names)).
				WithDetails(map[string]any{"sessionId": sessionID, "tools": names})
		}
		if explicit && runID != "" {
			m.bindLocked(runID, st)
		}
		tg := target(st, lt)
		m.mu.Unlock()
		return tg, nil
	}
	// Only connected tabs are offered and counted: a tab whose stream
	// dropped (killed without pagehide, or reloading) must neither take a
	// call meant for the tab the user sees nor make the choice ambiguous.
	var found, reconnecting []*state
	for _, st := range m.byTool[tool] {
		if !visible(st.tools[tool].tool) {
			continue
		}
		switch {
		case st.connected():
			found = append(found, st)
		case st.reachable():
			reconnecting = append(reconnecting, st)
		}
	}
	// Other replicas' tabs (presence.go) count like this replica's.
	var remoteUp, remoteWaiting []string
	for id := range m.remote {
		rt := m.remoteLocked(id)
		if rt == nil || rt.tools[tool] == nil || !visible(rt.tools[tool].tool) {
			continue
		}
		switch {
		case rt.up:
			remoteUp = append(remoteUp, id)
		case rt.waiting:
			remoteWaiting = append(remoteWaiting, id)
		}
	}
	switch {
	case len(found) == 0 && len(remoteUp) == 1:
		id := remoteUp[0]
		tg := remoteTarget(id, m.remote[id].tools[tool])
		if runID != "" {
			m.bindElsewhereLocked(runID, id) // as a tab here is bound (case 1 below)
		}
		m.mu.Unlock()
		return tg, nil
	case len(found)+len(remoteUp) == 0 && len(reconnecting) == 0 && len(remoteWaiting) == 1:
		id := remoteWaiting[0] // a reload in progress on another replica
		tg := remoteTarget(id, m.remote[id].tools[tool])
		m.mu.Unlock()
		return tg, nil
	case len(remoteUp) > 0 && len(found)+len(remoteUp) > 1:
		m.mu.Unlock()
		ids := append(idsOf(found), remoteUp...)
		slices.Sort(ids)
		return broker.Target{}, switchboard.Errorf(switchboard.CodeInvalidInput,
			"the browser tool %s is live in %d tabs; say which one with sessionId", tool, len(ids)).
			WithDetails(map[string]any{"candidates": ids})
	}
	if len(found) == 0 && len(reconnecting) == 1 && len(remoteWaiting) == 0 {
		found = reconnecting // a reload in progress: wait for it
	}
	switch len(found) {
	case 0:
		m.mu.Unlock()
		if len(reconnecting) > 0 {
			ids := idsOf(reconnecting)
			return broker.Target{}, switchboard.Errorf(switchboard.CodeToolUnavailable,
				"no connected tab advertises the browser tool %s; %d tabs that do are reconnecting (%s): name one with sessionId to wait for it", tool, len(ids), strings.Join(ids, ", ")).
				WithDetails(map[string]any{"reconnecting": ids})
		}
		return broker.Target{}, switchboard.Errorf(switchboard.CodeToolUnavailable,
			"no connected tab advertises the browser tool %s; open the page that mounts it, or check the name", tool)
	case 1:
		st := found[0]
		if runID != "" {
			m.bindLocked(runID, st)
		}
		tg := target(st, st.tools[tool])
		m.mu.Unlock()
		return tg, nil
	}
	m.mu.Unlock()
	ids := idsOf(found)
	return broker.Target{}, switchboard.Errorf(switchboard.CodeInvalidInput,
		"the browser tool %s is live in %d tabs; say which one with sessionId", tool, len(ids)).
		WithDetails(map[string]any{"candidates": ids})
}

// storedRunTab is the tab of a run bound on another replica (a call
// naming the run reached this one): the run's stored session, when a
// replica can reach its tab now ("" otherwise: the call chooses a tab as
// an unbound one does, as it would on the run's replica once the tab is
// gone). Only asked when other replicas announce tabs.
func (m *Manager) storedRunTab(ctx context.Context, runID string) string {
	rec, err := m.store.RunGet(ctx, runID)
	if err != nil || rec.SessionID == "" {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.sessions[rec.SessionID]
	if rt := m.remoteLocked(rec.SessionID); (st != nil && st.reachable()) || (rt != nil && rt.waiting) {
		return rec.SessionID
	}
	return ""
}

// notLive explains why a named session cannot take a call, and says
// whether the store records its stream on another replica (whose
// announcement this replica may not have heard yet).
func (m *Manager) notLive(ctx context.Context, id string) (elsewhere bool, err error) {
	s, err := m.store.SessionGet(ctx, id)
	switch {
	case switchboard.CodeOf(err) == switchboard.CodeNotFound:
		return false, switchboard.Errorf(switchboard.CodeNotFound, "no session %q", id)
	case err != nil:
		return false, err
	case !s.ClosedAt.IsZero():
		return false, switchboard.Errorf(switchboard.CodeSessionGone, "session %s was closed", id)
	}
	elsewhere = s.Stream != "" && s.Stream != m.replica && m.replicaLive(ctx, s.Stream)
	return elsewhere, switchboard.Errorf(switchboard.CodeSessionGone,
		"session %s has no connected tab (it closed or lost its connection)", id)
}

// replicaLive reports whether replica id is registered and neither
// stopped nor taken over: a stream recorded on a dead replica is not
// worth waiting for.
func (m *Manager) replicaLive(ctx context.Context, id string) bool {
	reps, err := m.store.ReplicaList(ctx)
	if err != nil {
		return true // cannot tell: the wait is bounded
	}
	for _, r := range reps {
		if r.ID == id {
			return r.StoppedAt.IsZero() && r.ClaimedBy == ""
		}
	}
	return false
}

// errOffline is the answer for a kept tab whose stream has been down past
// the reconnect window.
func (m *Manager) errOffline(id string) error {
	return switchboard.Errorf(switchboard.CodeSessionGone,
		"the tab of session %s lost its connection and did not reconnect within %s; it resumes if the page reconnects", id, m.opts.Reconnect)
}

func idsOf(states []*state) []string {
	ids := make([]string, len(states))
	for i, st := range states {
		ids[i] = st.id
	}
	slices.Sort(ids)
	return ids
}

func target(st *state, lt *liveTool) broker.Target {
	return broker.Target{SessionID: st.id, Tool: st.withOrigin(lt), Input: lt.input, Output: lt.outp}
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// storedTarget is the target of a call naming a reachable tab that does
// not (yet) offer tool here, when its stored advertisement declares it:
// the tab advertised it through another replica a moment ago, and the
// news is on its way (the request goes to the tab on the bus either way).
func (m *Manager) storedTarget(ctx context.Context, id, tool string, visible func(switchboard.Tool) bool) (broker.Target, bool) {
	if tool == "" {
		return broker.Target{}, false
	}
	lt := m.storedTool(ctx, id, tool)
	if lt == nil || !visible(lt.tool) {
		return broker.Target{}, false
	}
	return remoteTarget(id, lt), true
}

// remoteResolve is Resolve's answer for a named tab another replica holds.
func remoteResolve(id string, rt *remoteTab, tool string, visible func(switchboard.Tool) bool) (broker.Target, error) {
	if lt := rt.tools[tool]; lt != nil && visible(lt.tool) {
		return remoteTarget(id, lt), nil
	}
	names := make([]string, 0, len(rt.tools))
	for name, lt := range rt.tools {
		if visible(lt.tool) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return broker.Target{}, switchboard.Errorf(switchboard.CodeToolUnavailable,
		"session %s does not advertise the browser tool %s (it has: %s)", id, tool, listOrNone(names)).
		WithDetails(map[string]any{"sessionId": id, "tools": names})
}
