package e2e

import (
	"encoding/json"
	"testing"

	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/panelspec"
)

// TestChartsInChromium composes the curated dashboard (every chart kind,
// metrics and progress over the demo's projects) and checks the SVG the
// renderer built: the right marks per kind, patterns and a legend in
// text, the numbers in a data table, nothing outside the SVG namespace.
func TestChartsInChromium(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := e.tab(t, e.srv.URL+"/demo/")
	defer cancel()
	e.connected(t, ctx, demoTools...)
	poll(t, ctx, `!!window.switchboardPanels`)
	eval[bool](t, ctx, `window.switchboardPanels.ready.then(() => true)`)

	var spec json.RawMessage
	for _, ex := range panelspec.Examples() {
		if ex.Name == "project-dashboard" {
			spec = ex.Spec
		}
	}
	v := panelCall[struct{ InstanceID string }](t, e, panel.ToolCompose, map[string]any{"spec": spec})
	sel := `[data-sb-instance="` + v.InstanceID + `"]`
	poll(t, ctx, `document.querySelectorAll('`+sel+` [data-sb-chart]').length === 4`)

	count := func(q string) int {
		return eval[int](t, ctx, `document.querySelectorAll('`+sel+` `+q+`').length`)
	}
	checks := []struct {
		what  string
		query string
		want  int
	}{
		{"one bar per project (from the adapter)", `[data-sb-chart="bar"] svg rect[data-sb-point]`, 6},
		{"bar value labels", `[data-sb-chart="bar"] svg text[data-sb-label]`, 6},
		{"two lines", `[data-sb-chart="line"] svg path[data-sb-line]`, 2},
		{"a marker per line point", `[data-sb-chart="line"] svg [data-sb-point]`, 8},
		{"an area under the line", `[data-sb-chart="area"] svg path[data-sb-area]`, 1},
		{"three slices", `[data-sb-chart="pie"] svg path[data-sb-point]`, 3},
		{"a pattern per series or slice", `svg defs pattern`, 1 + 2 + 1 + 3},
		{"a legend entry per series or slice", `[data-sb-legend] li`, 1 + 2 + 1 + 3},
		{"both axes on every xy chart", `svg [data-sb-axis]`, 6},
		{"a description per chart", `svg > desc`, 4},
		{"a data table per chart", `details.sb-chart-data table`, 4},
		{"metrics", `.sb-metric`, 2},
		{"a native progress bar", `progress[value="34"][max="40"]`, 1},
	}
	for _, c := range checks {
		if got := count(c.query); got != c.want {
			t.Errorf("%s: %d × %s, want %d", c.what, got, c.query, c.want)
		}
	}
	// Everything inside the charts' svg is SVG, built by createElementNS.
	if got := eval[int](t, ctx, `[...document.querySelectorAll('`+sel+` svg *')].filter((n) => n.namespaceURI !== "http://www.w3.org/2000/svg").length`); got != 0 {
		t.Errorf("%d non-SVG elements inside the charts", got)
	}
	// Readable without colour: directions and values are words.
	if got := eval[string](t, ctx, `document.querySelector('`+sel+` [data-sb-node="spend"] [data-sb-delta]').textContent`); got != "▼ down 6.5 vs last month" {
		t.Errorf("metric delta reads %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('`+sel+` [data-sb-node="release"] [data-sb-value]').textContent`); got != "34 of 40 tasks (85%)" {
		t.Errorf("progress reads %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('`+sel+` [data-sb-chart="pie"] [data-sb-legend]').textContent`); got != "ActivePausedDone" {
		t.Errorf("pie legend %q", got)
	}

	// Data the server did not check (a source's records, here handed to
	// the renderer directly): strings, NaN and objects are left out and
	// counted, never drawn; a huge series is cut to the budget.
	got := eval[string](t, ctx, `import("/sdk/panels.js").then(({ renderPanel }) => {
		const box = document.createElement("div");
		const many = Array.from({ length: 5000 }, (_, i) => ({ x: "p" + i, v: i }));
		renderPanel({ spec: { v: 1, origin: "agent", root: "b", sources: { s: { kind: "state", path: "/s" } }, nodes: {
			b: { type: "panel-body", children: ["c", "big"] },
			c: { type: "chart", props: { kind: "line", source: "s", x: { key: "x" }, series: [{ key: "v" }] } },
			big: { type: "chart", props: { kind: "bar", data: many, x: { key: "x" }, series: [{ key: "v" }] } },
		} }, data: { s: [{ x: "a", v: 1 }, { x: "b", v: "12" }, { x: "c", v: NaN }, { x: "d", v: { valueOf: 1 } }, { x: "e", v: 3 }] } }, box);
		const c = box.querySelector('[data-sb-node="c"]'), big = box.querySelector('[data-sb-node="big"]');
		return [c.querySelectorAll("[data-sb-point]").length, c.querySelectorAll("path[data-sb-line]").length,
			c.querySelector("[data-sb-note]").textContent, big.querySelectorAll("rect[data-sb-point]").length,
			big.querySelector("[data-sb-note]").textContent].join("|");
	})`)
	if want := "2|2|3 values are not a number and not shown.|2000|Showing the first 2000 of 5000 rows."; got != want {
		t.Errorf("hostile chart data: %q, want %q", got, want)
	}
}
