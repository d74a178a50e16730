package docexport

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// specOf wraps document props in a panel spec and validates it: hostile
// documents here are ones the validator lets through (its budgets), so an
// agent could have written them.
func specOf(t testing.TB, props any) Document {
	t.Helper()
	p, _ := json.Marshal(props)
	raw := fmt.Sprintf(`{"v": 1, "origin": "agent", "root": "d", "nodes": {"d": {"type": "document", "props": %s}}}`, p)
	spec, issues := panelspec.Validate([]byte(raw), nil)
	if spec == nil {
		t.Fatalf("the validator refuses the document: %+v", issues[0])
	}
	d, _, err := FromSpec(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// renderBounded renders doc in both formats: each either fits
// MaxFileBytes or is refused PAYLOAD_TOO_LARGE. Time and heap are logged
// (measured, not asserted).
func renderBounded(t *testing.T, doc Document) {
	t.Helper()
	for _, f := range []Format{FormatPDF, FormatDOCX} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		b, err := Render(context.Background(), doc, f)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		switch {
		case err == nil && len(b) <= MaxFileBytes:
		case switchboard.CodeOf(err) == switchboard.CodePayloadTooLarge:
		default:
			t.Fatalf("%s: %v (%d bytes)", f, err, len(b))
		}
		t.Logf("%s: %d bytes, err %v, %v, %.1f MiB allocated", f, len(b), switchboard.CodeOf(err), took.Round(time.Millisecond),
			float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
	}
}

func row(cols int, cell string) []any {
	r := make([]any, cols)
	for i := range r {
		r[i] = cell
	}
	return r
}

// TestHostileBigTables: tables at the validator's limits (200 rows, 2000
// cells each) filling the 1 MiB spec budget.
func TestHostileBigTables(t *testing.T) {
	var blocks []any
	for range 4 {
		rows := make([][]any, 200)
		for i := range rows {
			rows[i] = row(10, strings.Repeat("wide cell text ", 7))
		}
		blocks = append(blocks, map[string]any{"type": "table", "header": row(10, "Header"), "rows": rows})
	}
	renderBounded(t, specOf(t, map[string]any{"title": "Tables", "blocks": blocks}))
}

// TestHostileTallCell: one cell taller than a page is cut with an
// ellipsis in the PDF (a row never spans pages) and kept whole in DOCX.
func TestHostileTallCell(t *testing.T) {
	cell := strings.Repeat("x\n", 4000) // the longest string the validator admits, 4000 lines
	doc := specOf(t, map[string]any{"blocks": []any{map[string]any{"type": "table", "rows": []any{[]any{cell, 1}}}}})
	renderBounded(t, doc)
}

// TestHostileDeepLists: lists at the validator's depth (4) with 200 items
// a level, and, past the validator, a list nested 10000 deep (the
// renderers stop at the same depth rather than recurse without end).
func TestHostileDeepLists(t *testing.T) {
	leaf := func(n int) []any {
		items := make([]any, n)
		for i := range items {
			items[i] = map[string]any{"runs": []any{map[string]any{"text": "item"}}}
		}
		return items
	}
	lvl3 := []any{map[string]any{"runs": []any{map[string]any{"text": "l3"}}, "items": leaf(200)}}
	lvl2 := []any{map[string]any{"runs": []any{map[string]any{"text": "l2"}}, "items": lvl3}}
	top := []any{map[string]any{"runs": []any{map[string]any{"text": "l1"}}, "items": lvl2}}
	var blocks []any
	for range 20 {
		blocks = append(blocks, map[string]any{"type": "list", "ordered": true, "items": top})
	}
	renderBounded(t, specOf(t, map[string]any{"blocks": blocks}))

	deep := Item{Runs: []Run{{Text: "bottom"}}}
	for range 10000 {
		deep = Item{Runs: []Run{{Text: "level"}}, Items: []Item{deep}}
	}
	renderBounded(t, Document{Blocks: []Block{{Type: "list", Items: []Item{deep}}}})
}

// TestHostileText: the longest runs the schema admits, in scripts the
// fonts lack (CJK, emoji), and 500 page breaks.
func TestHostileText(t *testing.T) {
	var blocks []any
	runs := make([]any, 200)
	for i := range runs {
		runs[i] = map[string]any{"text": strings.Repeat("漢字😀ab ", 6), "bold": i%2 == 0, "code": i%3 == 0}
	}
	for range 3 {
		blocks = append(blocks, map[string]any{"type": "paragraph", "runs": runs})
	}
	for range 490 {
		blocks = append(blocks, map[string]any{"type": "pageBreak"})
	}
	renderBounded(t, specOf(t, map[string]any{"blocks": blocks}))
}

// FuzzRender: whatever props decode, both renderers finish without
// panicking.
func FuzzRender(f *testing.F) {
	f.Add([]byte(`{"blocks": [{"type": "heading", "level": 9, "text": "x"}, {"type": "list", "items": [{"runs": [{"text": "a"}], "items": [{"runs": []}]}]}]}`))
	f.Add([]byte(`{"blocks": [{"type": "table", "header": ["a"], "rows": [[1, "x", null, true, {"a": 1}, []]]}, {"type": "callout", "tone": "nope", "runs": [{"text": "\n\t", "href": "https://x"}]}]}`))
	f.Add([]byte(`{"title": "t", "blocks": [{"type": "image", "asset": "a", "alt": ""}, {"type": "pageBreak"}, {"type": "mystery"}]}`))
	f.Fuzz(func(t *testing.T, props []byte) {
		if len(props) > 1<<16 {
			return
		}
		doc, err := Decode(props)
		if err != nil {
			return
		}
		for _, format := range []Format{FormatPDF, FormatDOCX} {
			if _, err := Render(context.Background(), doc, format); err != nil && switchboard.CodeOf(err) != switchboard.CodePayloadTooLarge {
				t.Fatalf("%s: %v", format, err)
			}
		}
	})
}

// TestTableAcrossPages: a table longer than a page repeats its header on
// each page, and the rows after a repeated header are set in the body
// font, not the header's bold (read from the PDF's page content streams:
// the font selected before each page's first row).
func TestTableAcrossPages(t *testing.T) {
	rows := make([][]any, 80)
	for i := range rows {
		rows[i] = []any{"Row " + strconv.Itoa(i), i * 1000, strings.Repeat("wrapping note text ", i%9)}
	}
	doc := specOf(t, map[string]any{"blocks": []any{map[string]any{"type": "table", "header": []any{"Name", "Amount", "Notes"}, "rows": rows}}})
	b, err := Render(context.Background(), doc, FormatPDF)
	if err != nil {
		t.Fatal(err)
	}
	utf16 := func(s string) []byte {
		var out []byte
		for _, r := range s {
			out = append(out, 0, byte(r))
		}
		return out
	}
	tf := regexp.MustCompile(`/(F[0-9a-f]+) [0-9.]+ Tf`)
	fontBefore := func(content, text []byte) string {
		i := bytes.Index(content, text)
		if i < 0 {
			return ""
		}
		m := tf.FindAllSubmatch(content[:i], -1)
		if len(m) == 0 {
			return ""
		}
		return string(m[len(m)-1][1])
	}
	var pages, bodyFonts, headFonts []string
	for _, m := range regexp.MustCompile(`(?s)stream\r?\n(.*?)endstream`).FindAllSubmatch(b, -1) {
		zr, err := zlib.NewReader(bytes.NewReader(m[1]))
		if err != nil {
			continue
		}
		content, err := io.ReadAll(zr)
		if err != nil || !bytes.Contains(content, utf16("Amount")) {
			continue // not a page with the table
		}
		pages = append(pages, "")
		headFonts = append(headFonts, fontBefore(content, utf16("Name")))
		bodyFonts = append(bodyFonts, fontBefore(content, utf16("Row")))
	}
	if len(pages) < 2 {
		t.Fatalf("the table spans %d pages with a header, want at least 2", len(pages))
	}
	for i := range pages {
		if headFonts[i] == "" || bodyFonts[i] == "" || headFonts[i] == bodyFonts[i] || bodyFonts[i] != bodyFonts[0] || headFonts[i] != headFonts[0] {
			t.Fatalf("page %d: header font %q, first row font %q (page 1: %q, %q)", i+1, headFonts[i], bodyFonts[i], headFonts[0], bodyFonts[0])
		}
	}
}
