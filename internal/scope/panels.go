package scope

import (
	"github.com/switchboardhq/switchboard"
)

// Panel scopes (issue 18): beside the tool names it may call, an agent can
// be limited to some panels and some page slots. The tool names say what it
// may do (a concierge allowed panel.list, panel.open and panel.fill and
// nothing else cannot run an action anywhere); the panel scope says where.

// PanelTarget is a panel instance as a panel scope sees it.
type PanelTarget struct {
	// Panel is the registered panel's id; "" for a panel an agent composed.
	Panel string
	// Slot is the page slot the instance is shown in.
	Slot string
	// Own reports whether the caller composed it (composed panels only).
	Own bool
}

// AllowsPanel reports whether ps admits target. Slots globs must match the
// instance's slot. Panels globs must match a registered panel's id; a
// composed panel has no id to match, so a panel-limited agent sees only
// the composed panels it made itself (its own content, in the slots it may
// use), and an agent with no Panels list sees every composed panel. An
// empty scope admits everything.
func AllowsPanel(ps switchboard.PanelScope, target PanelTarget) bool {
	if len(ps.Slots) > 0 && !matchAny(ps.Slots, target.Slot) {
		return false
	}
	if len(ps.Panels) == 0 {
		return true
	}
	if target.Panel == "" {
		return target.Own
	}
	return matchAny(ps.Panels, target.Panel)
}

// AllowsSlot reports whether ps lets an agent put a panel in slot.
func AllowsSlot(ps switchboard.PanelScope, slot string) bool {
	return len(ps.Slots) == 0 || matchAny(ps.Slots, slot)
}

// CheckPanelScope refuses globs that could never match a panel id or a
// slot name (the characters of tool names and the two wildcards).
func CheckPanelScope(ps switchboard.PanelScope) error {
	for _, g := range ps.Panels {
		if err := CheckGlob(g); err != nil {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "panels: %s", switchboard.AsError(err).Message)
		}
	}
	for _, g := range ps.Slots {
		if err := CheckGlob(g); err != nil {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "slots: %s", switchboard.AsError(err).Message)
		}
	}
	return nil
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if Match(g, name) {
			return true
		}
	}
	return false
}
