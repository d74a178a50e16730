package panel

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// Canvas policy (issue 18 item 4): how freely an agent may change the
// panel surface of a tab. It is merged through three layers — the daemon's
// config (Options.Canvas), the host (SetHostCanvas: PUT /api/v1/canvas),
// and the session (NarrowSession: the canvasPolicy of POST /sessions,
// which can only make the surface stricter) — and decided here, in
// NeedsApproval (what waits for a human) and in the panel operations
// (what is refused). No layer can relax the hard boundary: the policy only
// ever adds approvals to a call (approval.Options.Situational is an "or"),
// so host data and destructive actions keep the approval their tools and
// the class floor give them, and an agent never deletes what it did not
// compose.

// Canvas presets.
const (
	// CanvasGuarded is the default: composing asks the user, agent content
	// is a draft until the user pins it, and an agent removes its own
	// content only with the user's approval.
	CanvasGuarded = "guarded"
	// CanvasOpen lets an agent create, change and remove its own content
	// without asking, and pins what it composes.
	CanvasOpen = "open"
	// CanvasCustom names a merged policy that matches neither preset.
	CanvasCustom = "custom"
)

// CanvasPolicy is one layer of the canvas policy as written (the
// canvasPolicy of the config file, the host's route or the session mint).
// A preset sets every gate; a gate set beside it overrides the preset's
// value for that gate. Unset members leave the layer below unchanged.
type CanvasPolicy struct {
	Preset string `json:"preset,omitempty" yaml:"preset"`
	// HITLOnCompose makes panel.compose and panel.patch of an agent wait
	// for the user's approval.
	HITLOnCompose *bool `json:"hitlOnCompose,omitempty" yaml:"hitlOnCompose"`
	// AutoPin pins what an agent composes at once; unpinned agent content
	// is a draft that the agent's next compose in the same slot replaces.
	AutoPin *bool `json:"autoPin,omitempty" yaml:"autoPin"`
	// AllowDelete lets an agent close its own composed panels and remove
	// nodes from them without asking. Never content it did not compose.
	AllowDelete *bool `json:"allowDelete,omitempty" yaml:"allowDelete"`
	// AllowCodePreview lets agent panels carry preview nodes (runnable
	// HTML/CSS/JS shown only in the sandboxed preview origin).
	AllowCodePreview *bool `json:"allowCodePreview,omitempty" yaml:"allowCodePreview"`
}

// Canvas is a merged canvas policy: what is in force for one tab.
type Canvas struct {
	Preset           string `json:"preset"`
	HITLOnCompose    bool   `json:"hitlOnCompose"`
	AutoPin          bool   `json:"autoPin"`
	AllowDelete      bool   `json:"allowDelete"`
	AllowCodePreview bool   `json:"allowCodePreview"`
	// Open is true when the agent may change the surface without asking
	// (no HITL on compose, or deletes allowed): the renderer shows a
	// persistent indicator.
	Open bool `json:"open"`
}

// presetCanvas is a preset's gates.
func presetCanvas(name string) (Canvas, bool) {
	switch name {
	case CanvasGuarded:
		return Canvas{Preset: CanvasGuarded, HITLOnCompose: true}, true
	case CanvasOpen:
		return Canvas{Preset: CanvasOpen, AutoPin: true, AllowDelete: true}, true
	}
	return Canvas{}, false
}

// Validate checks a layer: a preset it names must exist.
func (p CanvasPolicy) Validate() error {
	if p.Preset != "" {
		if _, ok := presetCanvas(p.Preset); !ok {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "canvasPolicy.preset %q: use %q or %q", p.Preset, CanvasGuarded, CanvasOpen).
				WithDetails(map[string]any{"preset": p.Preset})
		}
	}
	return nil
}

// apply lays p over c: its preset first, then its gates.
func (c Canvas) apply(p CanvasPolicy) Canvas {
	if pc, ok := presetCanvas(p.Preset); ok {
		pc.AllowCodePreview = c.AllowCodePreview // code preview is never part of a preset
		c = pc
	}
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.HITLOnCompose, p.HITLOnCompose)
	set(&c.AutoPin, p.AutoPin)
	set(&c.AllowDelete, p.AllowDelete)
	set(&c.AllowCodePreview, p.AllowCodePreview)
	return c.named()
}

// narrow lays p over c but keeps, gate by gate, the stricter of the two:
// a session can take freedoms away, never add them.
func (c Canvas) narrow(p CanvasPolicy) Canvas {
	w := c.apply(p)
	c.HITLOnCompose = c.HITLOnCompose || w.HITLOnCompose
	c.AutoPin = c.AutoPin && w.AutoPin
	c.AllowDelete = c.AllowDelete && w.AllowDelete
	c.AllowCodePreview = c.AllowCodePreview && w.AllowCodePreview
	return c.named()
}

// named sets Preset and Open from the gates.
func (c Canvas) named() Canvas {
	c.Preset = CanvasCustom
	for _, name := range []string{CanvasGuarded, CanvasOpen} {
		pc, _ := presetCanvas(name)
		if pc.HITLOnCompose == c.HITLOnCompose && pc.AutoPin == c.AutoPin && pc.AllowDelete == c.AllowDelete {
			c.Preset = name
		}
	}
	c.Open = !c.HITLOnCompose || c.AllowDelete
	return c
}

// MergeCanvas merges the layers in order: the guarded default, the
// daemon's config, the host's setting (each may relax or tighten), then
// the session's narrowing (which may only tighten).
func MergeCanvas(daemon, host, session CanvasPolicy) Canvas {
	c, _ := presetCanvas(CanvasGuarded)
	return c.apply(daemon).apply(host).narrow(session)
}

// CanvasLayers is the canvas policy's layers and what they merge to for a
// tab (GET /api/v1/canvas answers it without a session).
type CanvasLayers struct {
	Daemon    CanvasPolicy `json:"daemon"`
	Host      CanvasPolicy `json:"host"`
	Session   CanvasPolicy `json:"session,omitzero"`
	Effective Canvas       `json:"effective"`
	// PreviewOrigin is the sandboxed preview tier's origin; empty when the
	// daemon serves none (then code preview is off whatever the gates say).
	PreviewOrigin string `json:"previewOrigin,omitempty"`
}

// EventCanvas tells a tab its canvas policy changed (data: Canvas).
const EventCanvas = "panel.canvas"

// CanvasStore is the part of the store that keeps the canvas policy's
// run-time layers (switchboard.Store implements it): the host layer as the
// setting hostCanvasKey, a session's narrowing as Session.Canvas, written
// with the session.
type CanvasStore interface {
	SessionGet(ctx context.Context, id string) (switchboard.Session, error)
	SettingGet(ctx context.Context, key string) (json.RawMessage, error)
	SettingPut(ctx context.Context, key string, value json.RawMessage, at time.Time) error
}

// hostCanvasKey is the setting holding the host layer.
const hostCanvasKey = "canvas.host"

// strictest is laid over a merged policy whose host layer or narrowing
// could not be read: a replica that is unsure enforces the narrowest
// surface rather than a possibly wider one than the host set.
var strictest = CanvasPolicy{Preset: CanvasGuarded, AllowCodePreview: new(bool)}

// SetHostCanvas replaces the host layer and tells every tab showing panels
// its new policy. With Options.Canvases it is stored, and every replica
// hears of it over the bus and tells the tabs it holds.
func (s *Service) SetHostCanvas(p CanvasPolicy) (CanvasLayers, error) {
	if err := p.Validate(); err != nil {
		return CanvasLayers{}, err
	}
	if s.opts.Canvases != nil {
		b, err := json.Marshal(p)
		if err != nil {
			return CanvasLayers{}, switchboard.Errorf(switchboard.CodeInternal, "encode the host canvas policy: %v", err)
		}
		ctx, cancel := context.WithTimeout(s.base, storeTimeout)
		err = s.opts.Canvases.SettingPut(ctx, hostCanvasKey, b, s.opts.Now())
		cancel()
		if err != nil {
			return CanvasLayers{}, err
		}
	}
	s.mu.Lock()
	s.hostCanvas, s.hostKnown = p, true
	s.mu.Unlock()
	s.canvasChanged()
	s.tellCanvas()
	return s.CanvasLayers(""), nil
}

// tellCanvas sends every tab this replica holds with panels its policy.
func (s *Service) tellCanvas() {
	s.mu.Lock()
	var tabs []string
	for id, t := range s.sessions {
		if t.host {
			tabs = append(tabs, id)
		}
	}
	s.mu.Unlock()
	for _, id := range tabs {
		if b, err := json.Marshal(s.CanvasFor(id)); err == nil {
			s.send(id, EventCanvas, b)
		}
	}
}

// hostLayer is the host layer in force; ok is false when the stored one
// could not be read. With a bus (several replicas may set it) the store is
// read every time, so no replica enforces a layer another replica already
// replaced; alone, this process is the only writer and keeps its copy.
func (s *Service) hostLayer() (p CanvasPolicy, ok bool) {
	s.mu.Lock()
	p, known := s.hostCanvas, s.hostKnown
	s.mu.Unlock()
	if s.opts.Canvases == nil || known && s.remote == nil {
		return p, true
	}
	ctx, cancel := context.WithTimeout(s.base, storeTimeout)
	defer cancel()
	raw, err := s.opts.Canvases.SettingGet(ctx, hostCanvasKey)
	p = CanvasPolicy{}
	switch {
	case switchboard.CodeOf(err) == switchboard.CodeNotFound: // never set
	case err != nil:
		s.log.Warn("host canvas policy not read; enforcing the strictest", "err", err)
		return CanvasPolicy{}, false
	case json.Unmarshal(raw, &p) != nil || p.Validate() != nil:
		s.log.Error("stored host canvas policy does not decode; enforcing the strictest", "value", string(raw))
		return CanvasPolicy{}, false
	}
	s.mu.Lock()
	s.hostCanvas, s.hostKnown = p, true
	s.mu.Unlock()
	return p, true
}

// sessionLayer is session id's narrowing; ok is false when it could not
// be read. A stored narrowing never changes, so it is cached; an unknown
// session has none (and is not cached: it may be created yet).
func (s *Service) sessionLayer(id string) (p CanvasPolicy, ok bool) {
	if id == "" {
		return CanvasPolicy{}, true
	}
	s.mu.Lock()
	p, cached := s.sessionCanvas[id]
	s.mu.Unlock()
	if cached || s.opts.Canvases == nil {
		return p, true
	}
	ctx, cancel := context.WithTimeout(s.base, storeTimeout)
	defer cancel()
	sess, err := s.opts.Canvases.SessionGet(ctx, id)
	switch {
	case switchboard.CodeOf(err) == switchboard.CodeNotFound:
		return CanvasPolicy{}, true
	case err != nil:
		s.log.Warn("session canvas policy not read; enforcing the strictest", "session", id, "err", err)
		return CanvasPolicy{}, false
	}
	if len(sess.Canvas) > 0 && (json.Unmarshal(sess.Canvas, &p) != nil || p.Validate() != nil) {
		s.log.Error("stored session canvas policy does not decode; enforcing the strictest", "session", id)
		return CanvasPolicy{}, false
	}
	s.cacheNarrowing(id, p)
	return p, true
}

// cacheNarrowing keeps a stored narrowing; the cache is bounded (dropped
// whole when full: the store still has every narrowing).
func (s *Service) cacheNarrowing(id string, p CanvasPolicy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessionCanvas) >= maxNarrowedSessions {
		clear(s.sessionCanvas)
	}
	s.sessionCanvas[id] = p
}

// NarrowSession records a session's narrowing of the canvas policy (the
// session mint's canvasPolicy). Called before the tab connects. With
// Options.Canvases the narrowing was stored with the session
// (session.OpenRequest.Canvas) and this only warms the cache.
func (s *Service) NarrowSession(sessionID string, p CanvasPolicy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p == (CanvasPolicy{}) {
		return nil
	}
	if s.opts.Canvases != nil {
		s.cacheNarrowing(sessionID, p)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessionCanvas) >= maxNarrowedSessions {
		return switchboard.Errorf(switchboard.CodeRateLimited, "%d sessions with their own canvas policy are open; close some first", maxNarrowedSessions)
	}
	s.sessionCanvas[sessionID] = p
	return nil
}

// ForgetSession drops a closed session's narrowing. Only the session's
// close does this: a tab that goes away and comes back within the same
// session keeps its narrowing (forgetting it earlier would widen the
// surface).
//
// It also deletes the session's stored panel instances: the session may
// be closed through a replica that does not hold its tab, or after the
// replica that did died.
func (s *Service) ForgetSession(sessionID string) {
	s.mu.Lock()
	delete(s.sessionCanvas, sessionID)
	s.mu.Unlock()
	if s.store != nil {
		ctx, cancel := context.WithTimeout(s.base, storeTimeout)
		defer cancel()
		if _, err := s.store.PanelInstanceDeleteSession(ctx, sessionID); err != nil {
			s.log.Warn("panel instances of a closed session not deleted", "session", sessionID, "err", err)
		}
	}
}

// maxNarrowedSessions bounds the sessions NarrowSession remembers.
const maxNarrowedSessions = 100_000

// CanvasLayers returns the layers and the merged policy for a session
// ("" for none). A layer that could not be read makes the merged policy
// the strictest.
func (s *Service) CanvasLayers(sessionID string) CanvasLayers {
	host, hostOK := s.hostLayer()
	narrow, sessOK := s.sessionLayer(sessionID)
	l := CanvasLayers{Daemon: s.opts.Canvas, Host: host, Session: narrow, PreviewOrigin: s.opts.PreviewOrigin}
	l.Effective = MergeCanvas(l.Daemon, l.Host, l.Session)
	if !hostOK || !sessOK {
		l.Effective = l.Effective.narrow(strictest)
	}
	if s.opts.Previews == nil {
		l.Effective.AllowCodePreview = false
	}
	return l
}

// CanvasFor is the canvas policy in force for a session's tab.
func (s *Service) CanvasFor(sessionID string) Canvas { return s.CanvasLayers(sessionID).Effective }

// NeedsApproval is where the canvas policy adds a human to an agent's
// panel call (approval.Options.Situational): compose and patch under
// hitlOnCompose, and closing or removing nodes from the agent's own
// content without allowDelete. It only ever adds: everything else keeps
// the approval its tool and the class floor give it.
func (s *Service) NeedsApproval(caller switchboard.Principal, t switchboard.Tool, input json.RawMessage) bool {
	if caller.Kind != switchboard.PrincipalAgent {
		return false
	}
	switch t.Name {
	case ToolCompose:
		var in struct {
			SessionID string          `json:"sessionId"`
			Spec      json.RawMessage `json:"spec"`
		}
		_ = json.Unmarshal(input, &in)
		c := s.CanvasFor(s.likelySession(in.SessionID))
		// A spec that will be refused is not put to the user: the agent
		// gets its repair hint at once, and only a spec that would show is
		// approved.
		return c.HITLOnCompose && s.composable(in.Spec, c)
	case ToolPatch:
		var in struct {
			InstanceID string          `json:"instanceId"`
			Patch      json.RawMessage `json:"patch"`
		}
		_ = json.Unmarshal(input, &in)
		session, own, ok := s.ownership(in.InstanceID, caller)
		if !ok || s.isHost(in.InstanceID) {
			return false // NOT_FOUND or FORBIDDEN when it runs
		}
		c := s.CanvasFor(session)
		del := removes(in.Patch)
		if del && !own {
			return false // FORBIDDEN when it runs
		}
		return (c.HITLOnCompose || del && !c.AllowDelete) && s.patchable(in.InstanceID, in.Patch, c)
	case ToolClose:
		var in struct {
			InstanceID string `json:"instanceId"`
		}
		_ = json.Unmarshal(input, &in)
		session, own, ok := s.ownership(in.InstanceID, caller)
		return ok && own && !s.CanvasFor(session).AllowDelete
	}
	return false
}

// composable reports whether an agent's compose of raw (an object or a
// JSON string holding one) would pass validation on a surface under c.
func (s *Service) composable(raw json.RawMessage, c Canvas) bool {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		raw = json.RawMessage(text)
	}
	spec, issues := panelspec.Validate(raw, s.validateOpts(panelspec.OriginAgent))
	return spec != nil && !panelspec.HasErrors(append(issues, previewGate(spec, c)...))
}

// patchable reports whether patch would apply to instance id and leave a
// spec that shows on a surface under c (else it is refused at once,
// without asking the user).
func (s *Service) patchable(id string, patch json.RawMessage, c Canvas) bool {
	in := s.known(id)
	var spec *panelspec.Spec
	s.mu.Lock()
	if in != nil {
		spec = in.spec
	}
	s.mu.Unlock()
	if spec == nil {
		return false
	}
	patched, issues := panelspec.Patch(spec, patch, s.validateOpts(panelspec.OriginAgent))
	return !panelspec.HasErrors(issues) && !panelspec.HasErrors(previewGate(patched, c))
}

// likelySession is the session a call naming named will act in, without
// failing: the named one, else the only tab showing panels on any replica
// (as resolveSession picks it, so a tab another replica holds is gated by
// its own policy), else none.
func (s *Service) likelySession(named string) string {
	if named != "" {
		return named
	}
	s.mu.Lock()
	var cands []string
	for id, t := range s.sessions {
		if t.host && s.tabs.Connected(id) {
			cands = append(cands, id)
		}
	}
	s.mu.Unlock()
	if s.remote != nil {
		for _, id := range s.tabs.PanelTabsElsewhere() {
			if !contains(cands, id) {
				cands = append(cands, id)
			}
		}
	}
	if len(cands) != 1 {
		return ""
	}
	return cands[0]
}

// ownership reports an open instance's session and whether caller
// composed it.
func (s *Service) ownership(id string, caller switchboard.Principal) (session string, own, ok bool) {
	in := s.known(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if in == nil {
		return "", false, false
	}
	return in.session, in.panelID == "" && in.owner.String() == caller.String(), true
}

// known is instance id as NeedsApproval weighs it: this replica's copy,
// else the stored one (its tab is held by another replica, where the call
// will be forwarded; deciding on nothing would skip the canvas gates),
// else nil.
func (s *Service) known(id string) *instance {
	s.mu.Lock()
	in := s.byID[id]
	s.mu.Unlock()
	if in != nil || s.store == nil {
		return in
	}
	st, err := s.stored(s.base, id)
	if err != nil {
		return nil // NOT_FOUND (or the store's error) when the call runs
	}
	return st
}

// isHost reports whether id is an instance of a registered (host) panel.
func (s *Service) isHost(id string) bool {
	in := s.known(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	return in != nil && in.panelID != ""
}

// checkOwnContent refuses an agent's change to content it did not
// compose: a host panel or another agent's. Caller holds no lock.
func (s *Service) checkOwnContent(caller switchboard.Principal, in *instance, verb string) error {
	if caller.Kind != switchboard.PrincipalAgent {
		return nil
	}
	s.mu.Lock()
	panelID, owner := in.panelID, in.owner.String()
	s.mu.Unlock()
	switch {
	case panelID != "":
		return switchboard.Errorf(switchboard.CodeForbidden, "panel instance %s is the host's; an agent cannot %s it under any canvas policy", in.id, verb).
			WithDetails(map[string]any{"instanceId": in.id, "owner": "host"})
	case owner != caller.String():
		return switchboard.Errorf(switchboard.CodeForbidden, "panel instance %s was composed by %s; an agent may %s only its own panels", in.id, owner, verb).
			WithDetails(map[string]any{"instanceId": in.id, "owner": owner})
	}
	return nil
}

// String describes c for logs and messages.
func (c Canvas) String() string {
	return fmt.Sprintf("%s (hitlOnCompose=%t autoPin=%t allowDelete=%t allowCodePreview=%t)", c.Preset, c.HITLOnCompose, c.AutoPin, c.AllowDelete, c.AllowCodePreview)
}

// agentMayClose says whether an agent may close in: its own composed panel
// (the approval for it, without allowDelete, was asked in NeedsApproval)
// or a host panel (closing hides a view the user can open again, as
// before the canvas policy); never another agent's panel, under any
// policy.
func (s *Service) agentMayClose(p switchboard.Principal, in *instance) error {
	s.mu.Lock()
	composed := in.panelID == ""
	s.mu.Unlock()
	if composed {
		return s.checkOwnContent(p, in, "close")
	}
	return nil
}

// replaceDrafts closes the drafts (unpinned panels) the composer of in
// left in its tab and slot: agent content is ephemeral until pinned.
func (s *Service) replaceDrafts(in *instance) {
	s.mu.Lock()
	var drafts []*instance
	if t := s.sessions[in.session]; t != nil {
		for _, id := range t.order {
			o := t.instances[id]
			if o != in && o.panelID == "" && !o.pinned && o.slot == in.slot && o.owner.String() == in.owner.String() {
				drafts = append(drafts, o)
			}
		}
	}
	s.mu.Unlock()
	for _, d := range drafts {
		s.close(d)
	}
}

// Pin keeps an agent panel: it is no longer a draft the agent's next
// compose replaces. Only the user pins (a tab for itself, or the user's
// own token); an agent cannot.
func (s *Service) Pin(ctx context.Context, id string) (Snapshot, error) {
	if p, ok := switchboard.PrincipalFrom(ctx); ok && p.Kind == switchboard.PrincipalAgent {
		return Snapshot{}, switchboard.Errorf(switchboard.CodeForbidden, "only the user pins a panel")
	}
	in, err := s.instance(ctx, id)
	if err != nil {
		return Snapshot{}, err
	}
	if in.detached {
		var sn Snapshot
		return sn, s.away(ctx, in, opPin, idBody{ID: id}, &sn)
	}
	s.mu.Lock()
	if in.closed {
		s.mu.Unlock()
		return Snapshot{}, switchboard.Errorf(switchboard.CodeNotFound, "panel instance %s was closed", in.id)
	}
	if in.panelID != "" {
		s.mu.Unlock()
		return Snapshot{}, switchboard.Errorf(switchboard.CodeInvalidInput, "panel instance %s is the host's; only agent panels are pinned", in.id)
	}
	changed := !in.pinned
	if changed {
		in.pinned = true
		in.version++
	}
	sn := in.snapshot()
	s.mu.Unlock()
	if changed {
		if err := s.changed(in, EventUpdate, sn); err != nil {
			return Snapshot{}, err
		}
	}
	return s.withLease(sn), nil
}

// previewGate refuses the preview nodes of an agent spec when the tab's
// canvas policy does not allow code preview.
func previewGate(spec *panelspec.Spec, c Canvas) []panelspec.Issue {
	if c.AllowCodePreview {
		return nil
	}
	var out []panelspec.Issue
	for _, id := range panelspec.PreviewNodes(spec) {
		out = append(out, panelspec.Issue{Code: switchboard.CodeSpecUnsafe, Severity: panelspec.SeverityError, NodeID: id,
			Pointer: "/nodes/" + id, Message: "code preview is off on this surface (canvasPolicy.allowCodePreview)",
			Suggestion: "show the result as panel nodes (text, table, chart) instead of runnable code"})
	}
	return out
}

// putPreviews hosts spec's preview nodes on the preview origin and returns
// their URLs by node id (nil without a preview server).
func (s *Service) putPreviews(spec *panelspec.Spec) map[string]string {
	ids := panelspec.PreviewNodes(spec)
	if len(ids) == 0 || s.opts.Previews == nil {
		return nil
	}
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		var p panelspec.PreviewProps
		if json.Unmarshal(spec.Nodes[id].Props, &p) == nil {
			out[id] = s.opts.Previews.Put(p.Code)
		}
	}
	return out
}

// removes reports whether an RFC 6902 patch removes anything (a delete on
// the canvas, held to allowDelete and to the agent's own content).
func removes(patch json.RawMessage) bool {
	var ops []struct {
		Op string `json:"op"`
	}
	_ = json.Unmarshal(patch, &ops)
	for _, op := range ops {
		if op.Op == "remove" {
			return true
		}
	}
	return false
}
