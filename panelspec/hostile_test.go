package panelspec

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// The hostile corpus: every file in
// testdata/hostile is refused with the listed code at the listed pointer,
// without a panic and within a memory bound. Inputs too big to commit are
// generated below.
var hostileWant = map[string]struct {
	code    switchboard.Code
	pointer string
}{
	"action-is-url.json":              {cAction, "/nodes/b/props/action"},
	"action-kind-js.json":             {cAction, "/actions/a/kind"},
	"case-variant-key.json":           {cParse, "/nodes/b/props/Href"},
	"chart-object-values.json":        {cProps, "/nodes/c/props/data/0/v"},
	"chart-proto-series.json":         {cUnsafe, "/nodes/c/props/series/0/key"},
	"chart-string-numbers.json":       {cProps, "/nodes/c/props/data/1/v"},
	"cycle.json":                      {cBudget, "/nodes/b/children/0"},
	"data-svg-image-plain.json":       {cUnsafe, "/nodes/i/props/src"},
	"data-svg-image.json":             {cUnsafe, "/nodes/i/props/src"},
	"data-text-html.json":             {cUnsafe, "/nodes/l/props/href"},
	"depth-10001.json":                {cBudget, "/state/x" + strings.Repeat("/0", DefaultMaxJSONDepth-2)},
	"depth-13.json":                   {cBudget, "/nodes/s13"},
	"document-deep-list.json":         {cBudget, "/nodes/d/props/blocks/0/items/0/items/0/items/0/items/0/items"},
	"document-image-by-url.json":      {cUnsafe, "/nodes/d/props/blocks/0/asset"},
	"document-markup-in-callout.json": {cUnsafe, "/nodes/d/props/blocks/0/runs/0/text"},
	"document-run-control-char.json":  {cUnsafe, "/nodes/d/props/blocks/0/runs/0/text"},
	"duplicate-key.json":              {cParse, "/nodes/b/props/href"},
	"event-handler.json":              {cUnsafe, "/nodes/t/props/onmouseover"},
	"img-onerror-in-callout.json":     {cUnsafe, "/nodes/c/props/text"},
	"inner-html.json":                 {cUnsafe, "/nodes/t/props/dangerouslySetInnerHTML"},
	"int-2p53-plus-1.json":            {cParse, "/state/id"},
	"invalid-utf8.json":               {cParse, ""},
	"js-double-encoded.json":          {cUnsafe, "/nodes/l/props/href"},
	"js-entity-colon.json":            {cUnsafe, "/nodes/l/props/href"},
	"js-entity-decimal.json":          {cUnsafe, "/nodes/l/props/href"},
	"js-entity-hex-no-semicolon.json": {cUnsafe, "/nodes/l/props/href"},
	"js-leading-controls.json":        {cUnsafe, "/nodes/l/props/href"},
	"js-mixed-case.json":              {cUnsafe, "/nodes/l/props/href"},
	"js-newline.json":                 {cUnsafe, "/nodes/l/props/href"},
	"js-percent.json":                 {cUnsafe, "/nodes/l/props/href"},
	"js-tab.json":                     {cUnsafe, "/nodes/l/props/href"},
	"js-zero-width.json":              {cUnsafe, "/nodes/l/props/href"},
	"lone-surrogate.json":             {cParse, "/nodes/b/props/text"},
	"nul-suffixed-key.json":           {cParse, "/nodes/b/props/href\x00"},
	"number-1e400.json":               {cParse, "/state/n"},
	"preview-code-object.json":        {cUnsafe, "/nodes/p/props/code/html"},
	"preview-iframe-in-text.json":     {cUnsafe, "/nodes/t/props/text"},
	"preview-markup-in-title.json":    {cUnsafe, "/nodes/p/props/title"},
	"preview-onload.json":             {cUnsafe, "/nodes/p/props/onload"},
	"preview-proto.json":              {cUnsafe, "/nodes/p/props/__proto__"},
	"preview-script-url.json":         {cUnsafe, "/nodes/p/props/src"},
	"preview-srcdoc.json":             {cUnsafe, "/nodes/p/props/srcdoc"},
	"preview-widen-sandbox.json":      {cProps, "/nodes/p/props/sandbox"},
	"preview-with-children.json":      {cProps, "/nodes/p/children"},
	"proto-field-path.json":           {cUnsafe, "/nodes/f/props/fields/0/path"},
	"proto-in-props.json":             {cUnsafe, "/nodes/t/props/__proto__"},
	"proto-in-state.json":             {cUnsafe, "/state/user/constructor"},
	"proto-node-id.json":              {cUnsafe, "/nodes/__proto__"},
	"raw-css-classname.json":          {cUnsafe, "/nodes/t/props/className"},
	"raw-css-style.json":              {cUnsafe, "/nodes/t/props/style"},
	"script-in-heading.json":          {cUnsafe, "/nodes/h/props/text"},
	"source-ref-mixed-kind.json":      {cParse, "/sources/s/kind"},
	"source-ref-proto-scope.json":     {cUnsafe, "/sources/s/params/pageId"},
	"source-ref-url.json":             {cAction, "/sources/s/source"},
	"svg-in-text.json":                {cUnsafe, "/nodes/t/props/text"},
	"table-js-cell.json":              {cUnsafe, "/nodes/t/props/rows/0/name"},
	"vbscript.json":                   {cUnsafe, "/nodes/l/props/href"},
}

type hostileCase struct {
	name    string
	raw     []byte
	opts    *Options
	code    switchboard.Code
	pointer string
	// maxBytes bounds the memory one Validate call may allocate.
	maxBytes uint64
}

// generatedHostile builds the inputs too big to commit.
func generatedHostile(t *testing.T) []hostileCase {
	huge := func(n int) string { return strings.Repeat("A", n) }
	manyNodes := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"v":1,"origin":"agent","root":"n0","nodes":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"n%d":{"type":"text"}`, i)
		}
		b.WriteString(`}}`)
		return []byte(b.String())
	}
	deepTree := func(depth int) []byte {
		return []byte(`{"v":0,"origin":"agent","root":` + strings.Repeat(`{"type":"stack","children":[`, depth) +
			`{"type":"stack"}` + strings.Repeat(`]}`, depth) + `}`)
	}
	chartRows := func(n int, v string) []byte {
		var b strings.Builder
		b.WriteString(`{"v":1,"origin":"agent","root":"c","nodes":{"c":{"type":"chart","props":{"kind":"line","x":{"key":"x"},"series":[{"key":"v"}],"data":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"v":` + v + `}`)
		}
		b.WriteString(`]}}}}`)
		return []byte(b.String())
	}
	previews := func(n int) []byte { // n preview nodes of the largest code each
		var b strings.Builder
		b.WriteString(`{"v":1,"origin":"agent","root":"p0","nodes":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":{"type":"preview","props":{"title":"w","code":"%s"}}`, i, huge(MaxPreviewCode))
		}
		b.WriteString(`}}`)
		return []byte(b.String())
	}
	var cases []hostileCase
	cases = append(cases,
		hostileCase{name: "a million chart points", raw: chartRows(1_000_000, "1"), code: cBudget, pointer: "", maxBytes: 64 << 10},
		hostileCase{name: "100,000 chart points under the byte limit", raw: chartRows(100_000, "1"), code: cBudget, pointer: "/nodes/c/props/data", maxBytes: 64 << 20},
		hostileCase{name: "100,000 strings as numbers", raw: chartRows(100_000, `"1"`), code: cBudget, pointer: "/nodes/c/props/data", maxBytes: 64 << 20},
		hostileCase{name: "10 MB body", raw: []byte(`{"v":1,"state":{"pad":"` + huge(10<<20) + `"}}`), code: cBudget, pointer: "", maxBytes: 64 << 10},
		hostileCase{name: "huge string", raw: []byte(mk(`"t":{"type":"text","props":{"text":"` + huge(900<<10) + `"}}`)), code: cBudget, pointer: "/nodes/t/props/text", maxBytes: 4 << 20},
		hostileCase{name: "huge key", raw: []byte(mk(`"t":{"type":"text","props":{"text":"x","` + huge(500<<10) + `":1}}`)), code: cBudget, pointer: "/nodes/t/props/" + huge(500<<10), maxBytes: 6 << 20},
		hostileCase{name: "version 0 tree 10,001 deep", raw: deepTree(10001), code: cBudget, maxBytes: 2 << 20,
			pointer: "/root" + strings.Repeat("/children/0", (DefaultMaxJSONDepth-2)/2) + "/children"},
		hostileCase{name: "a million nodes, default limit", raw: manyNodes(1_000_000), code: cBudget, pointer: "", maxBytes: 64 << 10},
		hostileCase{name: "preview code over its budget", raw: []byte(mk(`"p":{"type":"preview","props":{"title":"w","code":"` + huge(MaxPreviewCode+1) + `"}}`)),
			code: cBudget, pointer: "/nodes/p/props/code", maxBytes: 2 << 20},
		hostileCase{name: "preview code past the document's byte limit", raw: previews(17), code: cBudget, pointer: "", maxBytes: 64 << 10},
	)
	if !testing.Short() {
		// With the byte limit raised out of the way, the node cap in the
		// parser stops it after 4×MaxNodes nodes.
		cases = append(cases, hostileCase{name: "a million nodes, byte limit raised", raw: manyNodes(1_000_000),
			opts: &Options{Limits: Limits{MaxBytes: 64 << 20}}, code: cBudget, pointer: "/nodes", maxBytes: 40 << 20})
	}
	// A wide object exercises the indexed duplicate check.
	var wide strings.Builder
	for i := range 50_000 {
		fmt.Fprintf(&wide, `"k%d":%d,`, i, i)
	}
	cases = append(cases, hostileCase{name: "50,000 keys then a case variant", raw: []byte(`{"v":1,"state":{` + wide.String() + `"K1":0}}`),
		code: cParse, pointer: "/state/K1", maxBytes: 32 << 20})
	return cases
}

// TestHostileCorpus is not parallel: it measures allocation, which other
// tests running at the same time would disturb.
func TestHostileCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "hostile", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []hostileCase
	seen := map[string]bool{}
	for _, f := range files {
		name := filepath.Base(f)
		w, ok := hostileWant[name]
		if !ok {
			t.Errorf("%s has no expectation in hostileWant", name)
			continue
		}
		seen[name] = true
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, hostileCase{name: name, raw: raw, code: w.code, pointer: w.pointer, maxBytes: uint64(8*len(raw)) + 256<<10})
	}
	for name := range hostileWant {
		if !seen[name] {
			t.Errorf("hostileWant lists %s, which is not in testdata/hostile", name)
		}
	}
	cases = append(cases, generatedHostile(t)...)
	Validate([]byte(mk(``)), nil) // compile the catalog before measuring
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var spec *Spec
			var issues []Issue
			used := allocated(func() { spec, issues = Validate(tc.raw, tc.opts) })
			if spec != nil {
				t.Fatalf("hostile spec accepted")
			}
			found := false
			for _, is := range issues {
				if is.Code == tc.code && is.Pointer == tc.pointer && is.Severity == SeverityError {
					found = true
				}
			}
			if !found {
				t.Fatalf("want %s at %.80q; got:\n%.2000s", tc.code, tc.pointer, dump(issues))
			}
			if used > tc.maxBytes {
				t.Errorf("allocated %d bytes for a %d-byte input, bound %d", used, len(tc.raw), tc.maxBytes)
			}
			for _, is := range issues {
				if len(is.Message) > 1000 || len(is.Suggestion) > 1000 {
					t.Errorf("unbounded issue text (%d, %d bytes)", len(is.Message), len(is.Suggestion))
				}
			}
		})
	}
}

// allocated reports the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Rejections before parsing allocate next to nothing, however large the
// input: the byte limit is checked first.
func TestOversizeRejectedWithoutParsing(t *testing.T) {
	raw := []byte(`{"v":1,"state":{"pad":"` + strings.Repeat("x", 12<<20) + `"}}`)
	allocs := testing.AllocsPerRun(5, func() {
		if _, issues := Validate(raw, nil); len(issues) != 1 || issues[0].Code != cBudget {
			t.Fatalf("issues: %s", dump(issues))
		}
	})
	if allocs > 20 {
		t.Fatalf("%v allocations to refuse an oversized spec", allocs)
	}
}
