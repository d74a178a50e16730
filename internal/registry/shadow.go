package registry

import (
	"context"

	"github.com/switchboardhq/switchboard"
)

// The name of an api tool belongs to the catalog. A tab may implement a
// browser tool the catalog declares (the tab's version is then what a
// call runs, and what listings show), but it may not advertise a tool
// under an api tool's name: calls of that name run the api tool (the
// broker resolves the catalog first), so a listing showing the page's
// version would describe something else than what runs (RELIABILITY row
// 25, docs/browser.md "Names a tab may not use"). The rule has two
// halves, both here: CheckAdvertised refuses such an advertisement, and
// Visible hides a tab's tool whose name became an api tool's after it
// was advertised (an api tool registered later wins; a tab cannot block
// the app's own registration by squatting on a name).

// claimLocked records whether name's effective entry e (nil: none) is an
// api tool. Caller holds r.mu for writing.
func (r *Registry) claimLocked(name string, e *entry) {
	if e != nil && e.tool.Surface == switchboard.SurfaceAPI {
		r.apiNames.Store(name, struct{}{})
		return
	}
	r.apiNames.Delete(name)
}

// Claimed reports whether the catalog has an api tool named name, whoever
// may see it.
func (r *Registry) Claimed(name string) bool {
	_, ok := r.apiNames.Load(name)
	return ok
}

// shadows reports whether t is a tab's tool under an api tool's name.
func (r *Registry) shadows(t switchboard.Tool) bool {
	return t.Origin != nil && (t.Origin.Source == switchboard.SourceSession || t.Origin.SessionID != "") && r.Claimed(t.Name)
}

// CheckAdvertised refuses browser tools a tab would advertise under the
// name of a catalog api tool: CONFLICT naming the first such tool, and
// nothing is advertised. It reads the catalog as of now (another
// replica's registration included). The answer tells a tab that the name
// is taken even when its session's scope hides the api tool: the names
// are the app's own, and a listing that describes what a call runs
// matters more than hiding them from the app's pages.
func (r *Registry) CheckAdvertised(ctx context.Context, tools []switchboard.Tool) error {
	if err := r.fresh(ctx); err != nil {
		return err
	}
	for _, t := range tools {
		if r.Claimed(t.Name) {
			return switchboard.Errorf(switchboard.CodeConflict,
				"tool %s: the catalog has an api tool of that name, and a tab may not advertise one under it (calls of %s run the api tool); give the browser tool a name of its own, nothing was advertised", t.Name, t.Name).
				WithDetails(map[string]any{"tool": t.Name, "reason": "catalog api tool"})
		}
	}
	return nil
}
