package docexport

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"codeberg.org/go-pdf/fpdf"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/gobolditalic"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"

	"github.com/switchboardhq/switchboard"
)

// Epoch is the creation and modification date written into every file:
// a fixed date, so the same document gives the same bytes.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Page geometry and type, in points (A4).
const (
	pdfMargin   = 56.0
	pdfBody     = 10.5
	pdfLine     = 15.0
	pdfCellPad  = 4.0
	pdfListStep = 18.0
)

// pdfWriter lays a document out on fpdf pages.
type pdfWriter struct {
	f        *fpdf.Fpdf
	width    float64 // text width between the margins
	bottom   float64 // y where the page's text ends
	outline  int     // the last bookmark level, -1 before the first
	fontSize float64
}

// PDF renders doc as a PDF. ctx ends the work between blocks; progress is
// reported per block.
func PDF(ctx context.Context, doc Document) (out []byte, err error) {
	// fpdf is a large third-party layout engine: a panic in it fails this
	// export, not the daemon.
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, switchboard.Errorf(switchboard.CodeInternal, "the PDF writer failed on this document: %v", v)
		}
	}()
	f := fpdf.NewCustom(&fpdf.InitType{OrientationStr: "P", UnitStr: "pt", SizeStr: "A4"})
	f.SetCreationDate(Epoch)
	f.SetModificationDate(Epoch)
	f.SetCatalogSort(true) // fonts and images in sorted order, not map order
	f.SetCompression(true)
	f.SetProducer("switchboard document.export", true)
	f.SetCreator("switchboard", true)
	if doc.Title != "" {
		f.SetTitle(doc.Title, true)
	}
	// fpdf writes into the font bytes it is given while it subsets them,
	// so each document gets its own copy: the shared ones would carry one
	// export's edits into the next, and its bytes with them.
	f.AddUTF8FontFromBytes("go", "", bytes.Clone(goregular.TTF))
	f.AddUTF8FontFromBytes("go", "B", bytes.Clone(gobold.TTF))
	f.AddUTF8FontFromBytes("go", "I", bytes.Clone(goitalic.TTF))
	f.AddUTF8FontFromBytes("go", "BI", bytes.Clone(gobolditalic.TTF))
	f.AddUTF8FontFromBytes("gomono", "", bytes.Clone(gomono.TTF))
	f.SetMargins(pdfMargin, pdfMargin, pdfMargin)
	f.SetCellMargin(0) // cells are padded here (pdfCellPad), text aligns with the margin
	f.SetAutoPageBreak(true, pdfMargin)
	f.AliasNbPages("{nb}")
	w, h := f.GetPageSize()
	p := &pdfWriter{f: f, width: w - 2*pdfMargin, bottom: h - pdfMargin, outline: -1}
	f.SetFooterFunc(func() {
		f.SetY(h - pdfMargin + 18)
		f.SetFont("go", "", 8)
		f.SetTextColor(110, 110, 110)
		f.CellFormat(0, 10, pageLabel(f.PageNo()), "", 0, "C", false, 0, "")
	})
	f.AddPage()
	if doc.Title != "" {
		p.font("B", 20)
		p.color([3]int{20, 20, 20})
		f.MultiCell(0, 26, pdfText(doc.Title), "", "L", false)
		f.Ln(10)
	}
	for i, b := range doc.Blocks {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		p.block(b)
		switchboard.ReportProgress(ctx, switchboard.Progress{Progress: float64(i + 1), Total: float64(len(doc.Blocks)), Message: "rendering the PDF"})
		if f.Err() {
			break
		}
	}
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInternal, "write the PDF: %v", err)
	}
	return buf.Bytes(), nil
}

// pdfText is s as the PDF prints it: tabs as four spaces (fpdf does not
// lay them out inside a line) and characters the Go fonts lack, such as
// CJK and emoji, as U+FFFD, which they have: visibly replaced, not an
// empty box (and fpdf indexes glyph widths by 16-bit code, so a rune
// past U+FFFF would not reach it whole).
func pdfText(s string) string {
	covered := fontCoverage()
	ok := true
	for _, r := range s {
		if r == '\t' || r > 0xffff || !covered.has(r) && r != '\n' {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString("    ")
		case r == '\n' || r <= 0xffff && covered.has(r):
			b.WriteRune(r)
		default:
			b.WriteRune(unicode.ReplacementChar)
		}
	}
	return b.String()
}

// coverage is a set of BMP code points.
type coverage [0x10000 / 64]uint64

func (c *coverage) has(r rune) bool { return r <= 0xffff && c[r/64]&(1<<(r%64)) != 0 }

// fontCoverage is the code points every embedded font has a glyph for.
var fontCoverage = sync.OnceValue(func() *coverage {
	c := new(coverage)
	for i := range c {
		c[i] = ^uint64(0)
	}
	var buf sfnt.Buffer
	for _, ttf := range [][]byte{goregular.TTF, gobold.TTF, goitalic.TTF, gobolditalic.TTF, gomono.TTF} {
		f, err := sfnt.Parse(ttf)
		if err != nil {
			panic("docexport: the Go fonts do not parse: " + err.Error()) // they are compiled in
		}
		for r := rune(0); r <= 0xffff; r++ {
			if g, err := f.GlyphIndex(&buf, r); err != nil || g == 0 {
				c[r/64] &^= 1 << (r % 64)
			}
		}
	}
	return c
})

func pageLabel(n int) string { return "Page " + strconv.Itoa(n) + " of {nb}" }

func (p *pdfWriter) font(style string, size float64) {
	p.f.SetFont("go", style, size)
	p.fontSize = size
}

func (p *pdfWriter) color(c [3]int) { p.f.SetTextColor(c[0], c[1], c[2]) }

// room starts a new page unless h more points fit on this one.
func (p *pdfWriter) room(h float64) {
	if p.f.GetY()+h > p.bottom {
		p.f.AddPage()
	}
}

func (p *pdfWriter) block(b Block) {
	f := p.f
	f.SetLeftMargin(pdfMargin)
	f.SetX(pdfMargin)
	switch b.Type {
	case "heading":
		lvl := headingLevel(b.Level)
		size := [...]float64{0, 16, 13.5, 11.5}[lvl]
		p.room(size*1.4 + 3*pdfLine) // keep a heading with what follows it
		f.Ln([...]float64{0, 10, 8, 6}[lvl])
		p.font("B", size)
		p.color([3]int{20, 20, 20})
		// An outline entry per heading; a level may go at most one deeper
		// than the one before, or the outline tree breaks.
		ol := min(lvl-1, p.outline+1)
		f.Bookmark(pdfText(b.Text), ol, -1)
		p.outline = ol
		f.MultiCell(0, size*1.3, pdfText(b.Text), "", "L", false)
		f.Ln(4)
	case "paragraph":
		p.runs(b.Runs)
		f.Ln(pdfLine + 6)
	case "list":
		p.list(b.Ordered, b.Items, 1)
		f.Ln(6)
	case "table":
		p.table(b)
		f.Ln(10)
	case "image":
		p.image(b)
		f.Ln(10)
	case "callout":
		p.callout(b)
		f.Ln(10)
	case "pageBreak":
		if f.GetY() > pdfMargin+1 {
			f.AddPage()
		}
	}
}

// runs writes runs from the current position, wrapping at the margins.
func (p *pdfWriter) runs(rs []Run) {
	f := p.f
	for _, r := range rs {
		style := ""
		if r.Bold {
			style += "B"
		}
		if r.Italic {
			style += "I"
		}
		href := safeHref(r.Href)
		if href != "" {
			style += "U"
		}
		if r.Code {
			f.SetFont("gomono", "", pdfBody-1)
		} else {
			p.font(style, pdfBody)
		}
		if href != "" {
			f.SetFontStyle(strings.ReplaceAll(style, "U", "") + "U")
			f.SetTextColor(0x1a, 0x4f, 0xa8)
			for _, part := range writeChunks(pdfText(r.Text)) {
				f.WriteLinkString(pdfLine, part, href)
			}
		} else {
			f.SetTextColor(30, 30, 30)
			for _, part := range writeChunks(pdfText(r.Text)) {
				f.Write(pdfLine, part)
			}
		}
	}
}

// Chunk sizes of writeChunks, in runes.
const (
	writeChunkSoft = 64  // cut after the first space past this
	writeChunkHard = 256 // cut here when no space came
)

// writeChunks splits s for fpdf's Write, which re-decodes its whole
// string into runes for every character of a UTF-8 font (fpdf v0.12.0
// Fpdf.write): quadratic in the length of one call, 15 s of CPU for 250
// paragraphs of 4,000 characters. Write continues where the last call
// stopped and wraps at spaces, so writing word groups lays out as writing
// the whole run did; only a word longer than writeChunkHard runes may wrap
// at a chunk boundary instead of the exact character.
func writeChunks(s string) []string {
	if len(s) <= writeChunkSoft { // bytes ≥ runes: short enough already
		return []string{s}
	}
	var out []string
	start, n := 0, 0
	for i, r := range s {
		n++
		if (r == ' ' && n >= writeChunkSoft) || n >= writeChunkHard {
			end := i + len(string(r))
			out = append(out, s[start:end])
			start, n = end, 0
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// list writes items with their markers, nested lists indented.
func (p *pdfWriter) list(ordered bool, items []Item, depth int) {
	f := p.f
	indent := pdfMargin + float64(depth)*pdfListStep
	for i, it := range items {
		if i >= 200 {
			break
		}
		p.room(pdfLine)
		f.SetLeftMargin(indent)
		f.SetX(indent - pdfListStep)
		p.font("", pdfBody)
		f.SetTextColor(30, 30, 30)
		f.CellFormat(pdfListStep-4, pdfLine, listMarker(ordered, depth, i+1), "", 0, "R", false, 0, "")
		f.SetX(indent)
		p.runs(it.Runs)
		f.Ln(pdfLine + 2)
		if len(it.Items) > 0 && depth < 4 {
			p.list(ordered, it.Items, depth+1)
		}
		f.SetLeftMargin(indent)
	}
	f.SetLeftMargin(pdfMargin)
}

// table draws a table with a header row repeated on each page it spans.
func (p *pdfWriter) table(b Block) {
	f := p.f
	cols := len(b.Header)
	for _, r := range b.Rows {
		cols = max(cols, len(r))
	}
	cols = min(cols, 20)
	if b.Caption != "" {
		p.room(3 * pdfLine)
		p.font("I", pdfBody-1)
		f.SetTextColor(80, 80, 80)
		f.MultiCell(0, pdfLine-2, pdfText(b.Caption), "", "L", false)
		f.Ln(2)
	}
	if cols == 0 {
		return
	}
	widths := p.columnWidths(b, cols)
	header := func() {
		if len(b.Header) > 0 {
			cells := make([]Cell, cols)
			for i := range min(cols, len(b.Header)) {
				cells[i] = Cell{Text: b.Header[i]}
			}
			lines, h := p.rowLines(cells, widths, true)
			p.row(cells, lines, h, widths, true)
		}
	}
	header()
	for i, r := range b.Rows {
		if i >= 200 {
			break
		}
		cells := make([]Cell, cols)
		copy(cells, r)
		lines, h := p.rowLines(cells, widths, false)
		if p.f.GetY()+h > p.bottom {
			f.AddPage()
			header()
		}
		p.row(cells, lines, h, widths, false)
	}
}

// columnWidths shares the text width among columns: each gets at least
// its longest word (so "Budget" never breaks), and the rest goes to the
// columns whose text is longer than their share, in proportion.
func (p *pdfWriter) columnWidths(b Block, cols int) []float64 {
	least, natural := make([]float64, cols), make([]float64, cols)
	measure := func(i int, s string) {
		for _, line := range strings.Split(pdfText(s), "\n") {
			natural[i] = max(natural[i], min(p.f.GetStringWidth(line)+2*pdfCellPad, p.width))
			for _, word := range strings.Fields(line) {
				least[i] = max(least[i], min(p.f.GetStringWidth(word)+2*pdfCellPad, p.width/4))
			}
		}
	}
	p.font("B", pdfBody-1)
	for i := range min(cols, len(b.Header)) {
		measure(i, b.Header[i])
	}
	p.font("", pdfBody-1)
	for j, r := range b.Rows {
		if j >= 200 {
			break
		}
		for i := range min(cols, len(r)) {
			measure(i, r[i].Text)
		}
	}
	for i := range cols {
		least[i] = max(least[i], 2*pdfCellPad+6)
	}
	return shareWidths(least, natural, p.width)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// cellLines splits a cell's text to its column, at most as many lines as
// fit on one page (the rest is cut with an ellipsis: a row never spans
// pages).
func (p *pdfWriter) cellLines(c Cell, w float64, head bool) []string {
	if head {
		p.font("B", pdfBody-1)
	} else {
		p.font("", pdfBody-1)
	}
	if c.Text == "" {
		return []string{""}
	}
	var lines []string
	for _, para := range strings.Split(pdfText(c.Text), "\n") {
		if para == "" {
			lines = append(lines, "")
			continue
		}
		lines = append(lines, p.f.SplitText(para, w-2*pdfCellPad)...)
	}
	maxLines := int((p.bottom-pdfMargin-2*pdfCellPad)/(pdfLine-2)) - 4
	if len(lines) > maxLines {
		lines = append(lines[:maxLines-1], "…")
	}
	return lines
}

// rowLines splits a row's cells into lines and returns the row's height.
func (p *pdfWriter) rowLines(cells []Cell, widths []float64, head bool) ([][]string, float64) {
	lines := make([][]string, len(cells))
	n := 1
	for i, c := range cells {
		lines[i] = p.cellLines(c, widths[i], head)
		n = max(n, len(lines[i]))
	}
	return lines, float64(n)*(pdfLine-2) + 2*pdfCellPad
}

func (p *pdfWriter) row(cells []Cell, lines [][]string, h float64, widths []float64, head bool) {
	f := p.f
	if f.GetY()+h > p.bottom {
		f.AddPage()
	}
	y := f.GetY()
	x := pdfMargin
	f.SetDrawColor(170, 170, 170)
	f.SetLineWidth(0.5)
	// The lines were measured in this font; a header drawn since (a page
	// break repeats it) may have left another one set.
	if head {
		p.font("B", pdfBody-1)
	} else {
		p.font("", pdfBody-1)
	}
	for i, c := range cells {
		if head {
			f.SetFillColor(235, 238, 242)
			f.Rect(x, y, widths[i], h, "FD")
		} else {
			f.Rect(x, y, widths[i], h, "D")
		}
		f.SetTextColor(30, 30, 30)
		align := "L"
		if c.Num {
			align = "R"
		}
		for j, l := range lines[i] {
			f.SetXY(x+pdfCellPad, y+pdfCellPad+float64(j)*(pdfLine-2))
			f.CellFormat(widths[i]-2*pdfCellPad, pdfLine-2, l, "", 0, align, false, 0, "")
		}
		x += widths[i]
	}
	f.SetXY(pdfMargin, y+h)
}

// image draws a framed stand-in with the alt text: switchboard has no
// asset store for the export to read the image from (see docs/panels.md).
func (p *pdfWriter) image(b Block) {
	f := p.f
	p.room(70 + 2*pdfLine)
	y := f.GetY()
	f.SetDrawColor(150, 150, 150)
	f.SetFillColor(245, 245, 245)
	f.SetLineWidth(0.5)
	f.Rect(pdfMargin, y, p.width, 60, "FD")
	f.SetXY(pdfMargin+8, y+14)
	p.font("I", pdfBody)
	f.SetTextColor(70, 70, 70)
	f.CellFormat(p.width-16, pdfLine, "Image: "+firstLine(pdfText(b.Alt)), "", 2, "C", false, 0, "")
	f.SetX(pdfMargin + 8)
	f.SetFont("gomono", "", pdfBody-2)
	f.CellFormat(p.width-16, pdfLine, "asset "+b.Asset, "", 2, "C", false, 0, "")
	f.SetXY(pdfMargin, y+64)
	if b.Caption != "" {
		p.font("I", pdfBody-1)
		f.SetTextColor(80, 80, 80)
		f.MultiCell(0, pdfLine-2, pdfText(b.Caption), "", "C", false)
	}
}

// callout writes its title and runs beside a bar in the tone's colour; the
// tone is also named in words ("Warning: ..."), not shown by colour alone.
func (p *pdfWriter) callout(b Block) {
	f := p.f
	p.room(3 * pdfLine)
	c := toneColor(b.Tone)
	page0, y0 := f.PageNo(), f.GetY()
	f.SetLeftMargin(pdfMargin + 14)
	f.SetX(pdfMargin + 14)
	p.font("B", pdfBody)
	p.color(c)
	title := toneLabel(b.Tone)
	if b.Title != "" {
		title += ": " + pdfText(b.Title)
	}
	f.Write(pdfLine, title)
	f.Ln(pdfLine + 1)
	f.SetX(pdfMargin + 14)
	p.runs(b.Runs)
	f.Ln(pdfLine + 2)
	page1, y1 := f.PageNo(), f.GetY()
	// The bar is drawn last, once the callout's extent is known, on every
	// page it spans.
	f.SetFillColor(c[0], c[1], c[2])
	for pg := page0; pg <= page1; pg++ {
		from, to := pdfMargin, p.bottom
		if pg == page0 {
			from = y0
		}
		if pg == page1 {
			to = y1 - 2
		}
		f.SetPage(pg)
		if to > from {
			f.Rect(pdfMargin, from, 3, to-from, "F")
		}
	}
	f.SetPage(page1)
	f.SetLeftMargin(pdfMargin)
	f.SetXY(pdfMargin, y1)
}
