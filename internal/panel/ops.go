package panel

import (
	"context"
	"encoding/json"
	"slices"
	"sort"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// resolveSession picks the tab a call acts in: the one named; a tab acting
// for itself; else the only connected tab that shows panels; else, for a
// caller whose client shows panels itself, its chat surface (surface.go).
// Several tabs are INVALID_INPUT naming them (details.candidates), none
// TOOL_UNAVAILABLE.
func (s *Service) resolveSession(ctx context.Context, named string) (string, error) {
	if p, ok := switchboard.PrincipalFrom(ctx); ok && p.Kind == switchboard.PrincipalSession {
		if named != "" && named != p.ID {
			return "", switchboard.Errorf(switchboard.CodeForbidden, "a tab can open panels only in itself")
		}
		named = p.ID
	}
	own, shows := s.ownSurface(ctx)
	if named != "" {
		// Another principal's chat surface is as unknown as a closed tab.
		if !seesSession(ctx, named) || !s.tabs.Connected(named) {
			return "", switchboard.Errorf(switchboard.CodeSessionGone, "no tab of session %s is connected", named)
		}
		s.ensureTab(ctx, named)
		return named, nil
	}
	s.mu.Lock()
	var cands []string
	for id, t := range s.sessions {
		if t.host && s.tabs.Connected(id) {
			cands = append(cands, id)
		}
	}
	s.mu.Unlock()
	if s.remote != nil { // and those other replicas hold
		for _, id := range s.tabs.PanelTabsElsewhere() {
			if !contains(cands, id) {
				cands = append(cands, id)
			}
		}
	}
	sort.Strings(cands)
	switch len(cands) {
	case 0:
		if shows {
			s.ensureTab(ctx, own) // its panels stored before a restart come back
			return own, nil
		}
		return "", switchboard.Errorf(switchboard.CodeToolUnavailable, "no browser tab showing panels is connected; open the app in a browser (or pass sessionId)")
	case 1:
		return cands[0], nil
	}
	return "", switchboard.Errorf(switchboard.CodeInvalidInput, "%d tabs show panels; pass sessionId to choose one", len(cands)).
		WithDetails(map[string]any{"candidates": cands})
}

// tabLocked returns the state of session id, creating it (and watching for
// the tab going away) on first use. Caller holds s.mu.
func (s *Service) tabLocked(id string) *tabState {
	t := s.sessions[id]
	if t != nil {
		return t
	}
	t = &tabState{id: id, instances: map[string]*instance{}, composeFailures: map[string]int{}}
	s.sessions[id] = t
	if cancel, err := s.tabs.WatchGone(id, func() { s.dropTab(id) }); err == nil {
		t.unwatch = cancel
	}
	return t
}

// dropTab forgets a tab that is gone, with its instances. A gone heard
// from a replica the tab has left (it is connected here now) is ignored;
// the stored instances are deleted only when no replica holds the tab.
func (s *Service) dropTab(id string) {
	if s.tabs.Connected(id) {
		return
	}
	if s.store != nil && (s.tabs.Elsewhere(id) != "" || s.surfaceInUseElsewhere(id)) {
		s.evict(id)
		return
	}
	s.mu.Lock()
	if s.store != nil {
		// Until the deletion below is done the tab reads as having none.
		s.goneTabs[id] = struct{}{}
	}
	var ins []*instance
	done := func() {}
	if t := s.sessions[id]; t != nil {
		delete(s.sessions, id)
		for iid, in := range t.instances {
			delete(s.byID, iid)
			s.leases.drop(iid)
			ins = append(ins, in)
		}
		done = t.closeLocked()
	}
	s.mu.Unlock()
	done()
	if s.store == nil {
		return
	}
	// Deleted off the bus's delivery goroutine. Holding each instance's
	// wmu first lets a write already under way (persist; even the first
	// INSERT) land before the deletion instead of after it, where it would
	// bring the closed tab's instance back for good; writes that come
	// later see in.closed and write nothing.
	go func() {
		for _, in := range ins {
			in.wmu.Lock()
		}
		ctx, cancel := context.WithTimeout(s.base, storeTimeout)
		_, err := s.store.PanelInstanceDeleteSession(ctx, id)
		cancel()
		for _, in := range ins {
			in.wmu.Unlock()
		}
		if err != nil {
			s.log.Warn("panel instances of a gone tab not deleted", "session", id, "err", err)
		}
		s.mu.Lock()
		delete(s.goneTabs, id)
		s.goneDone++
		s.mu.Unlock()
	}()
}

// instance finds an open instance the caller may act on: a tab only its
// own, an agent only what its panel scope admits. Unknown, foreign and
// out-of-scope ids are the same NOT_FOUND.
//
// With a store, an instance this replica does not hold is read from it: a
// tab connected here gets its instances rebuilt (ensureTab); otherwise the
// answer is a detached copy (in.detached), which callers only read, or
// send to the replica holding the tab (away).
func (s *Service) instance(ctx context.Context, id string) (*instance, error) {
	scopes := s.panelScopes(ctx)
	s.ownSurface(ctx) // kept alive, and rebuilt here from the store if need be (below)
	s.mu.Lock()
	in := s.byID[id]
	s.mu.Unlock()
	if in != nil && (s.holder(in.session) != "" || s.surfaceStale(ctx, in)) {
		s.evict(in.session) // the tab moved to another replica, or changed there: this copy is stale
		in = nil
	}
	if in == nil && s.store != nil {
		st, err := s.stored(ctx, id)
		if err != nil {
			return nil, err
		}
		in = st
		if s.tabs.Connected(st.session) {
			s.ensureTab(ctx, st.session)
			s.mu.Lock()
			if x := s.byID[id]; x != nil {
				in = x
			}
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	if in != nil && !admits(scopes, caller(ctx), in) {
		in = nil
	}
	s.mu.Unlock()
	if in == nil {
		return nil, switchboard.Errorf(switchboard.CodeNotFound, "no open panel instance %q (panel.list shows the open ones)", id)
	}
	if p, ok := switchboard.PrincipalFrom(ctx); ok && p.Kind == switchboard.PrincipalSession && p.ID != in.session || !seesSession(ctx, in.session) {
		return nil, switchboard.Errorf(switchboard.CodeNotFound, "no open panel instance %q (panel.list shows the open ones)", id)
	}
	return in, nil
}

// OpenRequest opens a registered panel.
type OpenRequest struct {
	Panel     string         `json:"panel"`
	SessionID string         `json:"sessionId,omitempty"`
	Params    map[string]any `json:"params,omitempty"`
	// Scope is the seed's name for Params ("$scope.entityId" reads
	// scope.entityId); both may be given, Params wins on a clash.
	Scope map[string]any `json:"scope,omitempty"`
}

// Open shows a registered panel in a tab and returns its snapshot. The
// same panel with the same params already open there is shown again.
func (s *Service) Open(ctx context.Context, req OpenRequest) (Snapshot, error) {
	if named := s.targetSession(ctx, req.SessionID); named != "" {
		req.SessionID = named
		var sn Snapshot
		if done, err := s.elsewhere(ctx, named, opOpen, req, &sn); done {
			return sn, err
		}
	}
	req.Params = mergeScope(req.Params, req.Scope)
	scopes := s.panelScopes(ctx)
	s.mu.Lock()
	d := s.defs[req.Panel]
	if d != nil && !admitsDef(scopes, d) {
		d = nil // out of scope: answered as unknown
	}
	var ids []string
	for id, x := range s.defs {
		if admitsDef(scopes, x) {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	if d == nil {
		sort.Strings(ids)
		return Snapshot{}, switchboard.Errorf(switchboard.CodeNotFound, "no panel %q; %s", req.Panel, suggestPath(req.Panel, ids))
	}
	for _, p := range d.params {
		if _, ok := req.Params[p]; !ok {
			return Snapshot{}, switchboard.Errorf(switchboard.CodeInvalidInput, "panel %s needs params.%s", d.ID, p)
		}
	}
	for k := range req.Params {
		if !contains(d.params, k) {
			return Snapshot{}, switchboard.Errorf(switchboard.CodeInvalidInput, "panel %s takes no param %q (it takes: %s)", d.ID, k, orNone(d.params))
		}
	}
	session, err := s.resolveSession(ctx, req.SessionID)
	if err != nil {
		return Snapshot{}, err
	}
	key, _ := json.Marshal(req.Params) // map keys sorted: a stable identity
	s.mu.Lock()
	if t := s.sessions[session]; t != nil {
		for _, in := range t.instances {
			if in.panelID == d.ID {
				if k, _ := json.Marshal(in.params); string(k) == string(key) {
					sn := in.snapshot()
					s.mu.Unlock()
					s.push(EventOpen, sn) // shown again (the tab brings it into view)
					return s.withLease(sn), nil
				}
			}
		}
	}
	s.mu.Unlock()
	owner, _ := switchboard.PrincipalFrom(ctx)
	in := newInstance(session, d.ID, d.Title, d.Slot, d.Spec, req.Params, owner)
	in.previews = s.putPreviews(d.Spec) // the host's own code: no canvas gate, the same sandbox
	return s.start(ctx, in)
}

// start loads a new instance's sources, subscribes to its adapters, adds it
// to its tab and pushes panel.open.
func (s *Service) start(ctx context.Context, in *instance) (Snapshot, error) {
	s.mu.Lock()
	if t := s.sessions[in.session]; t != nil && len(t.instances) >= s.opts.MaxInstances {
		s.mu.Unlock()
		return Snapshot{}, switchboard.Errorf(switchboard.CodeConflict, "%d panels are open in this tab, the limit; close one first (panel.close)", s.opts.MaxInstances)
	}
	s.mu.Unlock()
	l := s.load(ctx, in.spec, in.params, in.owner, in.session, nil)
	in.apply(l) // in is not shared yet
	in.syncValues()
	in.cancelSubs = s.subscribe(in, in.spec, in.params, in.owner)
	s.mu.Lock()
	t := s.tabLocked(in.session)
	if len(t.instances) >= s.opts.MaxInstances { // lost a race with another open
		in.release()
		s.mu.Unlock()
		return Snapshot{}, switchboard.Errorf(switchboard.CodeConflict, "%d panels are open in this tab, the limit; close one first (panel.close)", s.opts.MaxInstances)
	}
	t.instances[in.id] = in
	t.order = append(t.order, in.id)
	s.byID[in.id] = in
	sn := in.snapshot()
	s.mu.Unlock()
	if err := s.changed(in, EventOpen, sn); err != nil {
		return Snapshot{}, err
	}
	return sn, nil
}

// slotsOf names the slots scopes allow, for a message.
func slotsOf(scopes []switchboard.PanelScope) string {
	var out []string
	for _, ps := range scopes {
		out = append(out, ps.Slots...)
	}
	return orNone(out)
}

// ComposeRequest shows an agent's own panel.
type ComposeRequest struct {
	Spec      json.RawMessage `json:"spec"`
	SessionID string          `json:"sessionId,omitempty"`
	Title     string          `json:"title,omitempty"`
	// Params (the seed's scope) fill the spec's "$scope.*" references.
	Params map[string]any `json:"params,omitempty"`
	Scope  map[string]any `json:"scope,omitempty"`
	// Slot is the page slot to show it in (DefaultSlot when empty).
	Slot string `json:"slot,omitempty"`
}

// ComposeResult is a composed panel that opened, with the validator's
// warnings.
type ComposeResult struct {
	Snapshot
	Warnings []panelspec.Issue `json:"warnings,omitempty"`
}

// Compose validates an agent's spec (origin forced to agent) and opens it.
// A refused spec is a SPEC_* error whose message is the repair hint; the
// second refusal in a row from the same composer opens the fallback card
// instead (details.fallbackInstanceId): one repair round, then the user
// sees what went wrong rather than a broken panel.
func (s *Service) Compose(ctx context.Context, req ComposeRequest) (ComposeResult, error) {
	if named := s.targetSession(ctx, req.SessionID); named != "" {
		req.SessionID = named
		var res ComposeResult
		if done, err := s.elsewhere(ctx, named, opCompose, req, &res); done {
			return res, err
		}
	}
	if req.Slot == "" {
		req.Slot = DefaultSlot
	}
	if !slotName.MatchString(req.Slot) {
		return ComposeResult{}, switchboard.Errorf(switchboard.CodeInvalidInput, "slot %q must be 1-64 characters of a-z, 0-9, '_' and '-', starting with a letter", req.Slot)
	}
	if scopes := s.panelScopes(ctx); !admitsSlot(scopes, req.Slot) {
		return ComposeResult{}, switchboard.Errorf(switchboard.CodeForbidden, "your scope does not let you show panels in slot %q; pass a slot it allows (%s)", req.Slot, slotsOf(scopes)).
			WithDetails(map[string]any{"slot": req.Slot})
	}
	session, err := s.resolveSession(ctx, req.SessionID)
	if err != nil {
		return ComposeResult{}, err
	}
	owner, _ := switchboard.PrincipalFrom(ctx)
	canvas := s.CanvasFor(session)
	spec, issues := panelspec.Validate(req.Spec, s.validateOpts(panelspec.OriginAgent))
	if spec != nil {
		issues = append(issues, previewGate(spec, canvas)...)
	}
	s.mu.Lock()
	t := s.tabLocked(session)
	if !panelspec.HasErrors(issues) {
		delete(t.composeFailures, owner.String())
		s.mu.Unlock()
		in := newInstance(session, "", req.Title, req.Slot, spec, mergeScope(req.Params, req.Scope), owner)
		in.pinned = canvas.AutoPin
		in.previews = s.putPreviews(spec)
		sn, err := s.start(ctx, in)
		if err == nil {
			s.replaceDrafts(in)
			s.composed("opened", "", spec, issues)
		}
		return ComposeResult{Snapshot: sn, Warnings: issues}, err
	}
	t.composeFailures[owner.String()]++
	second := t.composeFailures[owner.String()] >= 2
	if second {
		delete(t.composeFailures, owner.String())
	}
	s.mu.Unlock()
	e := panelspec.IssuesError(issues)
	if !second {
		s.composed("refused", string(e.Code), spec, issues)
		return ComposeResult{}, &switchboard.Error{Code: e.Code, Message: panelspec.RepairHint(issues), Details: refusal(issues)}
	}
	s.composed("fallback", string(e.Code), spec, issues)
	card := panelspec.FallbackCard(req.Title, issues)
	sn, err := s.start(ctx, newInstance(session, "", req.Title, req.Slot, card, nil, owner))
	details := refusal(issues)
	if err == nil {
		details["fallbackInstanceId"] = sn.InstanceID
	}
	return ComposeResult{}, &switchboard.Error{Code: e.Code, Details: details,
		Message: "the panel spec was refused again after its repair round, so the user sees a card saying the panel could not be shown. " + panelspec.RepairHint(issues)}
}

// composed tells Options.OnCompose how an agent's compose ended, in
// codes and counts only: never the spec's text, title or values.
func (s *Service) composed(outcome, code string, spec *panelspec.Spec, issues []panelspec.Issue) {
	if s.opts.OnCompose == nil {
		return
	}
	nodes := 0
	if spec != nil {
		nodes = len(spec.Nodes)
	}
	var codes []string
	for _, is := range issues {
		if c := string(is.Code); !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	s.opts.OnCompose(outcome, code, nodes, codes)
}

// FillRequest fills form fields of an open instance.
type FillRequest struct {
	InstanceID string                     `json:"instanceId"`
	Form       string                     `json:"form,omitempty"`
	Values     map[string]json.RawMessage `json:"values"`
}

// Skip is a value panel.fill left alone on purpose.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// FillResult reports each value: applied, skipped (the user edited that
// field) or an error. Nothing is saved. OK and SkippedUserDirty are the
// seed's fill_panel shape {ok, applied, skippedUserDirty, errors}: OK is
// true when no value was an error, SkippedUserDirty the skipped paths.
type FillResult struct {
	OK               bool         `json:"ok"`
	InstanceID       string       `json:"instanceId"`
	Applied          []string     `json:"applied"`
	Skipped          []Skip       `json:"skipped"`
	SkippedUserDirty []string     `json:"skippedUserDirty"`
	Errors           []FieldError `json:"errors"`
	Version          int          `json:"version"`
	// Lease is the caller's hold on the instance after the fill.
	Lease *Lease `json:"lease,omitempty"`
}

// Fill sets unsaved form values of an instance from an agent. Only declared
// fields are filled; fields the user has edited are skipped; read-only
// fields and values that do not fit their field are errors. It never saves:
// running the form's submit action is a separate, approved step.
func (s *Service) Fill(ctx context.Context, req FillRequest) (FillResult, error) {
	res, err := s.fill(ctx, req)
	if isStale(err) { // a stale copy, dropped: once more on the stored state
		res, err = s.fill(ctx, req)
	}
	return res, err
}

func (s *Service) fill(ctx context.Context, req FillRequest) (FillResult, error) {
	in, err := s.instance(ctx, req.InstanceID)
	if err != nil {
		return FillResult{}, err
	}
	if in.detached {
		var res FillResult
		return res, s.away(ctx, in, opFill, req, &res)
	}
	if len(req.Values) == 0 {
		return FillResult{}, switchboard.Errorf(switchboard.CodeInvalidInput, "values is empty; give {path: value} for the fields to fill")
	}
	paths := make([]string, 0, len(req.Values))
	for p := range req.Values {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	res := FillResult{InstanceID: in.id, Applied: []string{}, Skipped: []Skip{}, SkippedUserDirty: []string{}, Errors: []FieldError{}}
	s.mu.Lock()
	if in.closed {
		s.mu.Unlock()
		return FillResult{}, switchboard.Errorf(switchboard.CodeNotFound, "panel instance %s was closed", in.id)
	}
	if req.Form != "" && !in.hasForm(req.Form) {
		s.mu.Unlock()
		return FillResult{}, switchboard.Errorf(switchboard.CodeInvalidInput, "panel instance %s has no form %q", in.id, req.Form)
	}
	if _, err := s.leases.take(in.id, s.actor(ctx)); err != nil {
		s.mu.Unlock()
		return FillResult{}, err
	}
	for _, p := range paths {
		ref, fe := in.field(p, req.Form)
		if fe != nil {
			res.Errors = append(res.Errors, *fe)
			continue
		}
		var v any
		if err := json.Unmarshal(req.Values[p], &v); err != nil {
			res.Errors = append(res.Errors, FieldError{Path: p, Code: switchboard.CodeInvalidInput, Message: "value is not JSON"})
			continue
		}
		switch {
		case ref.field.ReadOnly:
			res.Errors = append(res.Errors, FieldError{Path: p, Code: switchboard.CodeForbidden, Message: "the field is read-only"})
		case in.dirty[ref.form.bind][p]:
			res.Skipped = append(res.Skipped, Skip{Path: p, Reason: "edited by the user; ask before changing it"})
			res.SkippedUserDirty = append(res.SkippedUserDirty, p)
		default:
			if fe := checkValue(ref.field, v, false); fe != nil {
				res.Errors = append(res.Errors, *fe)
				continue
			}
			if in.values[ref.form.bind] == nil {
				in.values[ref.form.bind] = map[string]any{}
			}
			in.values[ref.form.bind][p] = v
			mark(in.filled, ref.form.bind, p)
			res.Applied = append(res.Applied, p)
		}
	}
	var sn Snapshot
	if len(res.Applied) > 0 {
		in.version++
		sn = in.snapshot()
	}
	res.Version = in.version
	res.OK = len(res.Errors) == 0
	s.mu.Unlock()
	kind := ""
	if len(res.Applied) > 0 {
		kind = EventUpdate
	}
	if err := s.changed(in, kind, sn); err != nil { // the lease is stored too
		return FillResult{}, err
	}
	res.Lease = s.leases.get(in.id)
	return res, nil
}

func (in *instance) hasForm(id string) bool {
	for _, f := range in.forms {
		if f.node == id {
			return true
		}
	}
	return false
}

// PatchRequest edits a composed panel.
type PatchRequest struct {
	InstanceID string          `json:"instanceId"`
	Patch      json.RawMessage `json:"patch"`
}

// Patch applies an RFC 6902 patch to an agent-composed instance, atomically
// (panelspec.Patch): a patch that leaves any error changes nothing and is a
// SPEC_* error carrying the repair hint. Values the user or an agent
// entered stay where their form and field still exist.
func (s *Service) Patch(ctx context.Context, req PatchRequest) (ComposeResult, error) {
	res, err := s.patch(ctx, req)
	if isStale(err) {
		res, err = s.patch(ctx, req) // a stale copy, dropped: once more on the stored state
	}
	return res, err
}

func (s *Service) patch(ctx context.Context, req PatchRequest) (ComposeResult, error) {
	in, err := s.instance(ctx, req.InstanceID)
	if err != nil {
		return ComposeResult{}, err
	}
	if in.detached {
		var res ComposeResult
		return res, s.away(ctx, in, opPatch, req, &res)
	}
	s.mu.Lock()
	spec, origin := in.spec, in.spec.Origin
	s.mu.Unlock()
	if origin != panelspec.OriginAgent {
		return ComposeResult{}, switchboard.Errorf(switchboard.CodeForbidden, "panel instance %s is the host's; only composed panels can be patched (compose a new one instead)", in.id)
	}
	who := s.actor(ctx)
	if err := s.leases.check(in.id, who); err != nil {
		return ComposeResult{}, err
	}
	if p, _ := switchboard.PrincipalFrom(ctx); removes(req.Patch) {
		if err := s.checkOwnContent(p, in, "remove nodes from"); err != nil {
			return ComposeResult{}, err
		}
	}
	patched, issues := panelspec.Patch(spec, req.Patch, s.validateOpts(panelspec.OriginAgent))
	if patched != nil && patched != spec {
		issues = append(issues, previewGate(patched, s.CanvasFor(in.session))...)
	}
	if e := panelspec.IssuesError(issues); e != nil {
		return ComposeResult{}, &switchboard.Error{Code: e.Code, Message: "the patch was not applied; the panel is unchanged. " + panelspec.RepairHint(issues), Details: map[string]any{"issues": issues}}
	}
	l := s.load(ctx, patched, in.params, in.owner, in.session, nil)
	cancel := s.subscribe(in, patched, in.params, in.owner)
	s.mu.Lock()
	if in.closed || in.spec != spec { // closed, or patched by someone else meanwhile
		s.mu.Unlock()
		cancel()
		return ComposeResult{}, switchboard.Errorf(switchboard.CodeConflict, "panel instance %s changed while the patch applied; read it again and retry", in.id)
	}
	if _, err := s.leases.take(in.id, who); err != nil { // taken by another agent meanwhile
		s.mu.Unlock()
		cancel()
		return ComposeResult{}, err
	}
	old := in.cancelSubs
	in.spec, in.forms, in.cancelSubs = patched, formsOf(patched), cancel
	in.previews = s.putPreviews(patched)
	in.data, in.errs = map[string]json.RawMessage{}, map[string]*switchboard.Error{}
	in.apply(l)
	in.prune()
	in.syncValues()
	in.specVersion++
	in.version++
	sn := in.snapshot()
	s.mu.Unlock()
	if old != nil {
		old()
	}
	if err := s.changed(in, EventUpdate, sn); err != nil {
		return ComposeResult{}, err
	}
	return ComposeResult{Snapshot: s.withLease(sn), Warnings: issues}, nil
}

// prune drops values and marks of fields the spec no longer declares.
// Caller holds s.mu.
func (in *instance) prune() {
	declared := map[string]map[string]bool{}
	for _, f := range in.forms {
		for _, fld := range f.fields {
			mark(declared, f.bind, fld.Path)
		}
	}
	for _, m := range []map[string]map[string]bool{in.dirty, in.filled} {
		for src, set := range m {
			for p := range set {
				if !declared[src][p] {
					delete(set, p)
				}
			}
		}
	}
	for src, vals := range in.values {
		for p := range vals {
			if !declared[src][p] {
				delete(vals, p)
			}
		}
	}
	for id := range in.actions {
		if _, ok := in.spec.Actions[id]; !ok {
			delete(in.actions, id)
		}
	}
}

// CloseInstance closes an open instance and tells its tab.
func (s *Service) CloseInstance(ctx context.Context, id string) error {
	in, err := s.instance(ctx, id)
	if err != nil {
		return err
	}
	if in.detached {
		return s.away(ctx, in, opClose, idBody{ID: id}, nil)
	}
	if err := s.leases.check(in.id, s.actor(ctx)); err != nil { // closing drops the holder's unsaved values
		return err
	}
	if p, _ := switchboard.PrincipalFrom(ctx); p.Kind == switchboard.PrincipalAgent {
		if err := s.agentMayClose(p, in); err != nil {
			return err
		}
	}
	s.close(in)
	return nil
}

// close removes in from its tab and tells the tab.
func (s *Service) close(in *instance) {
	s.mu.Lock()
	if t := s.sessions[in.session]; t != nil {
		delete(t.instances, in.id)
		for i, x := range t.order {
			if x == in.id {
				t.order = append(t.order[:i], t.order[i+1:]...)
				break
			}
		}
	}
	delete(s.byID, in.id)
	in.release()
	s.mu.Unlock()
	s.leases.drop(in.id)
	s.unstore(in)
	b, _ := json.Marshal(map[string]string{"instanceId": in.id})
	s.send(in.session, EventClose, b)
}

// refusal is a refused compose's details: our issues, plus the seed's
// compose_panel failure shape {ok: false, errors}.
func refusal(issues []panelspec.Issue) map[string]any {
	return map[string]any{"issues": issues, "ok": false, "errors": issues}
}

// mergeScope joins params and the seed's scope; params win on a clash.
func mergeScope(params, scope map[string]any) map[string]any {
	if len(scope) == 0 {
		return params
	}
	out := make(map[string]any, len(params)+len(scope))
	for k, v := range scope {
		out[k] = v
	}
	for k, v := range params {
		out[k] = v
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
