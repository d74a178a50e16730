//go:build unix

package bench

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/panelspec"
)

// Panel Spec validation throughput: a typical 40-node composed panel and a
// 200-node worst case that fills every budget. Run with -cpu 1 (see
// README.md, "Panels"); the issue's target is 20,000 typical specs/s.

// panelSpec assembles a spec from node JSON fragments.
type panelSpec struct {
	nodes   map[string]any
	actions map[string]any
	sources map[string]any
	state   map[string]any
}

func newPanelSpec() *panelSpec {
	return &panelSpec{nodes: map[string]any{}, actions: map[string]any{}, sources: map[string]any{}, state: map[string]any{}}
}

func (p *panelSpec) node(id, typ string, props map[string]any, children ...string) string {
	n := map[string]any{"type": typ, "props": props}
	if len(children) > 0 {
		n["children"] = children
	}
	p.nodes[id] = n
	return id
}

func (p *panelSpec) json(root string) []byte {
	raw, err := json.Marshal(map[string]any{
		"v": 1, "origin": "agent", "root": root, "nodes": p.nodes,
		"actions": p.actions, "sources": p.sources, "state": p.state,
	})
	if err != nil {
		panic(err)
	}
	return raw
}

func panelFields(n int) []any {
	kinds := []string{"text", "number", "select", "checkbox", "date"}
	var out []any
	for i := range n {
		f := map[string]any{"path": fmt.Sprintf("rec.f%d", i), "label": fmt.Sprintf("Field %d", i), "kind": kinds[i%len(kinds)]}
		switch f["kind"] {
		case "text":
			f["required"], f["maxLength"], f["placeholder"] = true, 200, "Type here"
		case "number":
			f["min"], f["max"], f["step"] = 0, 100, 0.5
		case "select":
			f["options"] = []any{
				map[string]any{"value": "a", "label": "Alpha"}, map[string]any{"value": "b", "label": "Beta"},
				map[string]any{"value": "c", "label": "Gamma"},
			}
		}
		out = append(out, f)
	}
	return out
}

// panelTypical is a 40-node panel of the kind an agent composes: a header,
// a callout, tabs with a form, a table and a list, and a few sections.
func panelTypical() []byte {
	p := newPanelSpec()
	p.sources["task"] = map[string]any{"kind": "state", "path": "/task"}
	p.sources["tasks"] = map[string]any{"kind": "adapter", "adapter": "sql", "query": map[string]any{"table": "tasks"}}
	p.state["task"] = map[string]any{"rec": map[string]any{"f0": "x"}}
	p.actions["save"] = map[string]any{"kind": "mutate", "source": "task", "op": "update"}
	p.actions["del"] = map[string]any{"kind": "mutate", "source": "task", "op": "delete", "destructive": true, "confirm": "Delete it?"}
	p.actions["reload"] = map[string]any{"kind": "refresh", "source": "tasks"}
	p.actions["export"] = map[string]any{"kind": "tool", "tool": "tasks.export"}

	header := p.node("header", "row", map[string]any{"gap": "md", "align": "center"},
		p.node("hl", "column", map[string]any{"width": "2/3"},
			p.node("title", "heading", map[string]any{"text": "Sprint 42 overview", "level": 1}),
			p.node("sub", "text", map[string]any{"text": "Everything due in the next two weeks.", "tone": "muted"}),
			p.node("docs", "link", map[string]any{"href": "https://example.com/docs/sprints", "label": "How sprints work"})),
		p.node("hr", "column", map[string]any{"width": "1/3"},
			p.node("logo", "image", map[string]any{"src": "/static/logo.png", "alt": "Team logo", "width": 120})))
	alert := p.node("alert", "callout", map[string]any{"tone": "warning", "title": "2 tasks overdue", "text": "Review them before planning."})
	form := p.node("form", "field-form", map[string]any{"bind": "task", "submit": "save", "fields": panelFields(6)})
	formBar := p.node("formbar", "row", map[string]any{"justify": "end"},
		p.node("bsave", "button", map[string]any{"label": "Save", "action": "save", "variant": "primary"}),
		p.node("bdel", "button", map[string]any{"label": "Delete", "action": "del", "variant": "danger"}))
	tab1 := p.node("tab1", "stack", map[string]any{"gap": "sm"}, form, formBar)
	table := p.node("table", "table", map[string]any{"source": "tasks", "caption": "Open tasks", "columns": []any{
		map[string]any{"key": "title", "label": "Task", "kind": "link", "hrefKey": "url"},
		map[string]any{"key": "owner", "label": "Owner"},
		map[string]any{"key": "prio", "label": "Priority", "kind": "badge"},
		map[string]any{"key": "est", "label": "Days", "kind": "number"},
		map[string]any{"key": "due", "label": "Due", "kind": "date"},
	}})
	tab2 := p.node("tab2", "stack", map[string]any{"gap": "md"}, table,
		p.node("tnote", "text", map[string]any{"text": "Sorted by due date."}),
		p.node("breload", "button", map[string]any{"label": "Refresh", "action": "reload", "variant": "secondary"}))
	tab3 := p.node("tab3", "stack", map[string]any{"gap": "md"},
		p.node("lh", "heading", map[string]any{"text": "Risks", "level": 3}),
		p.node("list", "list", map[string]any{"items": []any{"Vendor API change", "Two people on leave", "Flaky CI", "Scope creep", "Unclear owner"}}),
		p.node("lt", "text", map[string]any{"text": "Raise new risks in the weekly sync."}))
	tabs := p.node("tabs", "tabs", map[string]any{"labels": []any{"Edit", "Tasks", "Risks"}}, tab1, tab2, tab3)
	kids := []string{header, alert, tabs}
	for i := range 4 {
		kids = append(kids, p.node(fmt.Sprintf("sec%d", i), "stack", map[string]any{"gap": "sm"},
			p.node(fmt.Sprintf("sh%d", i), "heading", map[string]any{"text": fmt.Sprintf("Section %d", i), "level": 2}),
			p.node(fmt.Sprintf("st%d", i), "text", map[string]any{"text": "A short paragraph of plain text that explains this section in a sentence or two."})))
	}
	kids = append(kids, p.node("bexport", "button", map[string]any{"label": "Export", "action": "export"}),
		p.node("footer", "row", map[string]any{"justify": "between"},
			p.node("fl1", "link", map[string]any{"href": "mailto:team@example.com", "label": "Mail the team"}),
			p.node("fl2", "link", map[string]any{"href": "/sprints/41", "label": "Last sprint"}),
			p.node("ft", "text", map[string]any{"text": "Updated every hour.", "size": "sm"})))
	p.node("body", "panel-body", map[string]any{"title": "Sprint", "description": "Composed by the assistant."}, kids...)
	return p.json("body")
}

// panelWorst fills the budgets: 200 nodes, a chain 12 levels deep, forms
// with 20 fields, tables with inline rows, long texts and many URLs.
func panelWorst() []byte {
	p := newPanelSpec()
	p.sources["rec"] = map[string]any{"kind": "state", "path": "/rec"}
	p.state["rec"] = map[string]any{}
	p.actions["save"] = map[string]any{"kind": "mutate", "source": "rec", "op": "update"}
	long := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 60) // ~3.4 KB
	// A chain of 10 containers under the body, leaves at depth 12.
	var chain []string
	for i := range 10 {
		chain = append(chain, fmt.Sprintf("c%d", i))
	}
	var leaves []string
	for i := 0; len(leaves) < 200-len(chain)-1; i++ {
		id := fmt.Sprintf("n%d", i)
		switch i % 6 {
		case 0:
			p.node(id, "field-form", map[string]any{"bind": "rec", "submit": "save", "fields": panelFields(20)})
		case 1:
			var rows []any
			for r := range 20 {
				rows = append(rows, map[string]any{"a": fmt.Sprintf("row %d", r), "b": r, "u": fmt.Sprintf("https://example.com/r/%d", r)})
			}
			p.node(id, "table", map[string]any{"columns": []any{
				map[string]any{"key": "a", "label": "A"}, map[string]any{"key": "b", "label": "B", "kind": "number"},
				map[string]any{"key": "a", "label": "Link", "kind": "link", "hrefKey": "u"},
			}, "rows": rows})
		case 2:
			p.node(id, "text", map[string]any{"text": long})
		case 3:
			p.node(id, "link", map[string]any{"href": "https://example.com/a/very/long/path?with=query&and=more#fragment", "label": "A link"})
		case 4:
			p.node(id, "image", map[string]any{"src": "data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 200), "alt": "inline image"})
		case 5:
			p.node(id, "button", map[string]any{"label": "Save", "action": "save"})
		}
		leaves = append(leaves, id)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		var kids []string
		if i+1 < len(chain) {
			kids = append(kids, chain[i+1])
		}
		// Spread the leaves over the chain, most at the bottom.
		take := len(leaves) / (i + 1)
		if i == 0 {
			take = len(leaves)
		}
		kids = append(kids, leaves[:take]...)
		leaves = leaves[take:]
		p.node(chain[i], "stack", map[string]any{"gap": "sm"}, kids...)
	}
	p.node("body", "panel-body", map[string]any{"title": "Worst case"}, chain[0])
	return p.json("body")
}

func benchValidate(b *testing.B, raw []byte, wantNodes int) {
	spec, issues := panelspec.Validate(raw, nil)
	if spec == nil || len(issues) > 0 {
		b.Fatalf("benchmark spec does not validate cleanly: %+v", issues)
	}
	if len(spec.Nodes) != wantNodes {
		b.Fatalf("spec has %d nodes, want %d", len(spec.Nodes), wantNodes)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		if s, _ := panelspec.Validate(raw, nil); s == nil {
			b.Fatal("rejected")
		}
	}
	reportRates(b, cpu0, "specs/s")
}

// reportRates reports operations per second of wall time and of process
// CPU time. On a shared machine the second is the steadier figure: it does
// not count time the benchmark spent waiting for a core. With -cpu 1 the
// garbage collector shares the one P, so its work is counted too.
func reportRates(b *testing.B, cpu0 time.Duration, unit string) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "cpu-"+unit)
	}
}

// processCPU is the user plus system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkPanelValidateTypical(b *testing.B) { benchValidate(b, panelTypical(), 40) }

func BenchmarkPanelValidateWorst(b *testing.B) { benchValidate(b, panelWorst(), 200) }

// BenchmarkPanelBaselineUnmarshal is a yardstick, not a target: plain
// encoding/json decoding of the typical spec into an interface{}, with no
// checks at all. On a shared machine it shows how loaded the cores were.
func BenchmarkPanelBaselineUnmarshal(b *testing.B) {
	raw := panelTypical()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			b.Fatal(err)
		}
	}
	reportRates(b, cpu0, "specs/s")
}

// BenchmarkPanelPatch measures one small agent edit: a patch replacing a
// heading's text, applied to the typical spec and re-validated.
func BenchmarkPanelPatch(b *testing.B) {
	spec, issues := panelspec.Validate(panelTypical(), nil)
	if spec == nil {
		b.Fatalf("typical spec: %+v", issues)
	}
	patch := []byte(`[{"op":"replace","path":"/nodes/title/props/text","value":"Sprint 43 overview"}]`)
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		if _, issues := panelspec.Patch(spec, patch, nil); panelspec.HasErrors(issues) {
			b.Fatalf("patch: %+v", issues)
		}
	}
	reportRates(b, cpu0, "patches/s")
}
