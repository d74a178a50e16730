package panel

import (
	"context"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// Role scopes on panels (issue 18). An agent's token, and the agent
// session it acts in, may limit it to some panels and page slots
// (switchboard.PanelScope). The panel tools hold every call to both before
// they act, and show the agent nothing outside them: a registered panel or
// an open instance it may not work on answers exactly as one that does not
// exist (NOT_FOUND), the way a tool outside an agent's scope answers
// TOOL_NOT_FOUND. What an agent may do (open, fill, run actions) is said
// by the tool names its scope allows; where, by the panel scope.

// panelScopes returns the panel scopes the caller in ctx is held to: its
// principal's (agents only) and its agent session's (Options.AgentScope).
// None means unlimited.
func (s *Service) panelScopes(ctx context.Context) []switchboard.PanelScope {
	var out []switchboard.PanelScope
	if p, ok := switchboard.PrincipalFrom(ctx); ok && p.Kind == switchboard.PrincipalAgent && p.PanelScope.Limited() {
		out = append(out, p.PanelScope)
	}
	if id, ok := switchboard.AgentSessionFrom(ctx); ok && s.opts.AgentScope != nil {
		if sc, ok := s.opts.AgentScope(ctx, id); ok && sc.PanelScope.Limited() {
			out = append(out, sc.PanelScope)
		}
	}
	return out
}

// caller is who a scope check compares an instance's composer with.
func caller(ctx context.Context) string {
	p, _ := switchboard.PrincipalFrom(ctx)
	return p.String()
}

// admits reports whether every scope lets the caller work on in. Caller
// holds s.mu (or in is not shared).
func admits(scopes []switchboard.PanelScope, who string, in *instance) bool {
	t := scope.PanelTarget{Panel: in.panelID, Slot: in.slot, Own: in.panelID == "" && in.owner.String() == who}
	for _, ps := range scopes {
		if !scope.AllowsPanel(ps, t) {
			return false
		}
	}
	return true
}

// admitsDef reports whether every scope lets the caller open d.
func admitsDef(scopes []switchboard.PanelScope, d *def) bool {
	for _, ps := range scopes {
		if !scope.AllowsPanel(ps, scope.PanelTarget{Panel: d.ID, Slot: d.Slot}) {
			return false
		}
	}
	return true
}

// admitsSlot reports whether every scope lets the caller compose in slot.
func admitsSlot(scopes []switchboard.PanelScope, slot string) bool {
	for _, ps := range scopes {
		if !scope.AllowsSlot(ps, slot) {
			return false
		}
	}
	return true
}

// Admits reports whether the caller in ctx may see and work on the panel
// instance id: the predicate the workspace digest and any other listing
// filter panels with. An id this service does not know is admitted only to
// a caller whose panel scope limits nothing.
func (s *Service) Admits(ctx context.Context, id string) bool {
	scopes := s.panelScopes(ctx)
	if len(scopes) == 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.byID[id]
	return in != nil && admits(scopes, caller(ctx), in)
}
