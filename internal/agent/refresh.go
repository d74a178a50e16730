package agent

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"slices"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
)

// EventToolsChanged is the CUSTOM event a run emits when its tool list
// changed between steps; its value is the run's manifest
// (switchboard.Manifest with runId filled).
const EventToolsChanged = "switchboard.tools.changed"

// refreshTools runs before each step after the first: it rebuilds the
// run's tools from the catalog and the tab's live tools as they are now,
// so a tool registered (or withdrawn) while the run runs is offered (or
// no longer offered) from the next model turn on. The built toolset is
// only swapped in when what the model would see differs; a failure to
// list keeps the tools the run has (the step goes on with what it knew).
func (rt *Runtime) refreshTools(ctx context.Context, st *runState) {
	next, err := rt.buildToolset(ctx, st.run, st.req.Tools)
	if err != nil || next.fingerprint() == st.ts.fingerprint() {
		return
	}
	st.ts.mu.Lock()
	for name := range st.ts.loaded { // tools the model described stay loaded
		if next.byReal[name] != nil {
			next.loaded[name] = true
		}
	}
	st.ts.mu.Unlock()
	st.ts = next
	st.em.emit(&agui.Custom{Name: EventToolsChanged, Value: next.manifest(st.run.id)})
}

// fingerprint digests what the model is offered: each tool's names,
// kind, description and schema, in order.
func (ts *toolset) fingerprint() [32]byte {
	h := sha256.New()
	for _, o := range ts.order {
		b, _ := json.Marshal([]any{o.model, o.real, o.kind, o.desc, o.pinned, o.schema, o.ui})
		h.Write(b)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// manifest is the run's tool list as a manifest: the tools/list analog
// scoped to run id (meta tools are the loop's own, not the app's).
func (ts *toolset) manifest(runID string) switchboard.Manifest {
	m := switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion, RunID: runID, Tools: []switchboard.Tool{}}
	for _, o := range ts.order {
		t := switchboard.Tool{Name: o.real, Description: o.desc, InputSchema: o.schema, UI: o.ui}
		switch o.kind {
		case kindMeta:
			continue
		case kindCatalog:
			t.Surface = switchboard.SurfaceAPI
		case kindBrowser:
			t.Surface = switchboard.SurfaceBrowser
		}
		m.Tools = append(m.Tools, t)
	}
	slices.SortFunc(m.Tools, func(a, b switchboard.Tool) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return m
}
