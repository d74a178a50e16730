package docexport

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard"
)

// DOCX is WordprocessingML (ECMA-376) written directly: a zip of a few
// XML parts. No Go DOCX writer is both maintained and byte-stable (they
// stamp zip entries with the clock); the parts needed for the block model
// are small, and writing them here pins every byte: parts in a fixed
// order, every zip entry dated Epoch, ids assigned in document order.

// Page geometry in twentieths of a point (A4, 2 cm margins).
const (
	docxPageW  = 11906
	docxPageH  = 16838
	docxMargin = 1134
	docxTextW  = docxPageW - 2*docxMargin
)

type docxWriter struct {
	body  strings.Builder
	links []string // hyperlink targets; rel id rIdL<n+1>
	lists []bool   // numbering instances, one per list block: ordered?
}

// listKind is numbering instance n's abstract definition: 1 ordered, 0
// bullets.
func (w *docxWriter) listKind(n int) int {
	if w.lists[n-1] {
		return 1
	}
	return 0
}

// DOCX renders doc as a DOCX file.
func DOCX(ctx context.Context, doc Document) ([]byte, error) {
	w := &docxWriter{}
	if doc.Title != "" {
		w.para(`<w:pStyle w:val="Title"/>`, w.textRun("", doc.Title))
	}
	for i, b := range doc.Blocks {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		w.block(b)
		switchboard.ReportProgress(ctx, switchboard.Progress{Progress: float64(i + 1), Total: float64(len(doc.Blocks)), Message: "rendering the DOCX"})
	}
	// A document must end with a paragraph before its section properties.
	w.body.WriteString(`<w:p/>`)
	return w.zip(doc.Title)
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (w *docxWriter) para(pPr, content string) {
	w.body.WriteString("<w:p>")
	if pPr != "" {
		w.body.WriteString("<w:pPr>" + pPr + "</w:pPr>")
	}
	w.body.WriteString(content)
	w.body.WriteString("</w:p>")
}

// textRun is one run of text with run properties rPr: newlines become
// breaks and tabs tabs, the rest is escaped text.
func (w *docxWriter) textRun(rPr, text string) string {
	var b strings.Builder
	b.WriteString("<w:r>")
	if rPr != "" {
		b.WriteString("<w:rPr>" + rPr + "</w:rPr>")
	}
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteString("<w:br/>")
		}
		for j, part := range strings.Split(line, "\t") {
			if j > 0 {
				b.WriteString("<w:tab/>")
			}
			if part != "" {
				b.WriteString(`<w:t xml:space="preserve">` + esc(part) + "</w:t>")
			}
		}
	}
	b.WriteString("</w:r>")
	return b.String()
}

// runs writes text runs; a safe href makes a hyperlink.
func (w *docxWriter) runs(rs []Run) string {
	var b strings.Builder
	for _, r := range rs {
		var p strings.Builder
		href := safeHref(r.Href)
		switch {
		case href != "":
			p.WriteString(`<w:rStyle w:val="Hyperlink"/>`)
		case r.Code:
			p.WriteString(`<w:rStyle w:val="CodeChar"/>`)
		}
		if r.Bold {
			p.WriteString("<w:b/>")
		}
		if r.Italic {
			p.WriteString("<w:i/>")
		}
		if href != "" && r.Code {
			p.WriteString(`<w:rFonts w:ascii="Consolas" w:hAnsi="Consolas" w:cs="Consolas"/>`)
		}
		run := w.textRun(p.String(), r.Text)
		if href != "" {
			w.links = append(w.links, href)
			run = fmt.Sprintf(`<w:hyperlink r:id="rIdL%d" w:history="1">%s</w:hyperlink>`, len(w.links), run)
		}
		b.WriteString(run)
	}
	return b.String()
}

func (w *docxWriter) block(b Block) {
	switch b.Type {
	case "heading":
		lvl := headingLevel(b.Level)
		w.para(fmt.Sprintf(`<w:pStyle w:val="Heading%d"/>`, lvl), w.textRun("", b.Text))
	case "paragraph":
		w.para("", w.runs(b.Runs))
	case "list":
		w.lists = append(w.lists, b.Ordered)
		w.list(b.Items, len(w.lists), 0)
	case "table":
		w.table(b)
	case "image":
		// No asset store to read the image from: a framed stand-in with the
		// alt text, as in the PDF (see docs/panels.md).
		keep := ""
		if b.Caption != "" {
			keep = `<w:keepNext/>`
		}
		w.para(`<w:pStyle w:val="ImagePlaceholder"/>`+keep, w.textRun("<w:i/>", "Image: "+b.Alt)+
			"<w:r><w:br/></w:r>"+w.textRun(`<w:rStyle w:val="CodeChar"/><w:sz w:val="16"/>`, "asset "+b.Asset))
		if b.Caption != "" {
			w.para(`<w:pStyle w:val="Caption"/><w:jc w:val="center"/>`, w.textRun("", b.Caption))
		}
	case "callout":
		c := toneColor(b.Tone)
		hex := fmt.Sprintf("%02X%02X%02X", c[0], c[1], c[2])
		pPr := fmt.Sprintf(`<w:pStyle w:val="Callout"/><w:pBdr><w:left w:val="single" w:sz="24" w:space="8" w:color="%s"/></w:pBdr>`, hex)
		title := toneLabel(b.Tone)
		if b.Title != "" {
			title += ": " + b.Title
		}
		w.para(pPr+`<w:keepNext/>`, w.textRun(fmt.Sprintf(`<w:b/><w:color w:val="%s"/>`, hex), title))
		w.para(pPr, w.runs(b.Runs))
		// Word joins the borders of adjacent paragraphs that share them, so
		// an empty paragraph keeps two callouts apart.
		w.para(`<w:spacing w:after="0"/>`, "")
	case "pageBreak":
		w.para("", `<w:r><w:br w:type="page"/></w:r>`)
	}
}

// list writes items at level lvl of numbering instance num; nested lists
// continue it one level down, as Word numbers outlines.
func (w *docxWriter) list(items []Item, num, lvl int) {
	for i, it := range items {
		if i >= 200 {
			break
		}
		w.para(fmt.Sprintf(`<w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="%d"/><w:numId w:val="%d"/></w:numPr>`, lvl, num), w.runs(it.Runs))
		if len(it.Items) > 0 && lvl < 3 {
			w.list(it.Items, num, lvl+1)
		}
	}
}

func (w *docxWriter) table(b Block) {
	cols := len(b.Header)
	for _, r := range b.Rows {
		cols = max(cols, len(r))
	}
	cols = min(cols, 20)
	if b.Caption != "" {
		w.para(`<w:pStyle w:val="Caption"/><w:keepNext/>`, w.textRun("", b.Caption))
	}
	if cols == 0 {
		return
	}
	widths := docxColumnWidths(b, cols)
	w.body.WriteString(`<w:tbl><w:tblPr><w:tblStyle w:val="TableGrid"/><w:tblW w:w="5000" w:type="pct"/><w:tblLook w:val="04A0" w:firstRow="1" w:lastRow="0" w:firstColumn="0" w:lastColumn="0" w:noHBand="0" w:noVBand="1"/></w:tblPr><w:tblGrid>`)
	for _, c := range widths {
		fmt.Fprintf(&w.body, `<w:gridCol w:w="%d"/>`, c)
	}
	w.body.WriteString("</w:tblGrid>")
	row := func(cells []Cell, head bool) {
		w.body.WriteString("<w:tr>")
		if head {
			w.body.WriteString(`<w:trPr><w:tblHeader/></w:trPr>`)
		}
		for i := range cols {
			var c Cell
			if i < len(cells) {
				c = cells[i]
			}
			fmt.Fprintf(&w.body, `<w:tc><w:tcPr><w:tcW w:w="%d" w:type="dxa"/>`, widths[i])
			if head {
				w.body.WriteString(`<w:shd w:val="clear" w:color="auto" w:fill="EBEEF2"/>`)
			}
			w.body.WriteString("</w:tcPr>")
			pPr, rPr := `<w:pStyle w:val="TableText"/>`, ""
			if c.Num {
				pPr += `<w:jc w:val="right"/>`
			}
			if head {
				rPr = "<w:b/>"
			}
			w.para(pPr, w.textRun(rPr, c.Text))
			w.body.WriteString("</w:tc>")
		}
		w.body.WriteString("</w:tr>")
	}
	if len(b.Header) > 0 {
		cells := make([]Cell, len(b.Header))
		for i, h := range b.Header {
			cells[i] = Cell{Text: h}
		}
		row(cells, true)
	}
	for i, r := range b.Rows {
		if i >= 200 {
			break
		}
		row(r, false)
	}
	w.body.WriteString("</w:tbl>")
	// Word joins a table to a table right after it; a paragraph keeps
	// them apart and gives the space after.
	w.para(`<w:spacing w:after="120"/>`, "")
}

// docxColumnWidths shares the text width (in twips) among columns as the
// PDF does, measuring text in characters: no font metrics are at hand,
// and the reader's font may differ anyway.
func docxColumnWidths(b Block, cols int) []int {
	least, natural := make([]float64, cols), make([]float64, cols)
	measure := func(i int, s string) {
		for _, line := range strings.Split(s, "\n") {
			natural[i] = max(natural[i], float64(utf8.RuneCountInString(line)))
			for _, word := range strings.Fields(line) {
				least[i] = max(least[i], min(float64(utf8.RuneCountInString(word)), 20))
			}
		}
	}
	for i := range min(cols, len(b.Header)) {
		measure(i, b.Header[i])
	}
	for j, r := range b.Rows {
		if j >= 200 {
			break
		}
		for i := range min(cols, len(r)) {
			measure(i, r[i].Text)
		}
	}
	// About 130 twips a character at the table's size (wide enough for
	// a bold header in a wide fallback font such as DejaVu Sans), three
	// more for the cell's margins.
	for i := range least {
		least[i] = (least[i] + 3) * 130
		natural[i] = (natural[i] + 3) * 130
	}
	out := make([]int, cols)
	for i, w := range shareWidths(least, natural, docxTextW) {
		out[i] = int(w)
	}
	return out
}

const (
	nsW   = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	nsR   = `xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	xmlPI = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"
	relNS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
)

// zip writes the package: parts in a fixed order, each dated Epoch.
func (w *docxWriter) zip(title string) ([]byte, error) {
	var rels strings.Builder
	rels.WriteString(xmlPI + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`)
	rels.WriteString(`<Relationship Id="rIdStyles" Type="` + relNS + `/styles" Target="styles.xml"/>`)
	rels.WriteString(`<Relationship Id="rIdNumbering" Type="` + relNS + `/numbering" Target="numbering.xml"/>`)
	rels.WriteString(`<Relationship Id="rIdFooter" Type="` + relNS + `/footer" Target="footer1.xml"/>`)
	for i, l := range w.links {
		fmt.Fprintf(&rels, `<Relationship Id="rIdL%d" Type="%s/hyperlink" Target="%s" TargetMode="External"/>`, i+1, relNS, escAttr(l))
	}
	rels.WriteString(`</Relationships>`)

	document := xmlPI + `<w:document ` + nsW + ` ` + nsR + `><w:body>` + w.body.String() +
		fmt.Sprintf(`<w:sectPr><w:footerReference w:type="default" r:id="rIdFooter"/><w:pgSz w:w="%d" w:h="%d"/><w:pgMar w:top="%d" w:right="%d" w:bottom="%d" w:left="%d" w:header="567" w:footer="567" w:gutter="0"/></w:sectPr>`,
			docxPageW, docxPageH, docxMargin, docxMargin, docxMargin, docxMargin) +
		`</w:body></w:document>`

	core := xmlPI + `<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">`
	if title != "" {
		core += `<dc:title>` + esc(title) + `</dc:title>`
	}
	core += `<dc:creator>switchboard</dc:creator></cp:coreProperties>`

	parts := []struct{ name, body string }{
		{"[Content_Types].xml", contentTypes},
		{"_rels/.rels", packageRels},
		{"docProps/core.xml", core},
		{"word/document.xml", document},
		{"word/_rels/document.xml.rels", rels.String()},
		{"word/styles.xml", stylesXML},
		{"word/numbering.xml", w.numbering()},
		{"word/footer1.xml", footerXML},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range parts {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: p.name, Method: zip.Deflate, Modified: Epoch})
		if err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInternal, "write the DOCX: %v", err)
		}
		if _, err := fw.Write([]byte(p.body)); err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInternal, "write the DOCX: %v", err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInternal, "write the DOCX: %v", err)
	}
	return buf.Bytes(), nil
}

func escAttr(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // escapes quotes too
	return b.String()
}

// numbering defines a bullet and an ordered outline, and one instance per
// list block, each restarting at 1.
func (w *docxWriter) numbering() string {
	var b strings.Builder
	b.WriteString(xmlPI + `<w:numbering ` + nsW + `>`)
	lvl := func(i int, fmtName, text, font string) {
		fmt.Fprintf(&b, `<w:lvl w:ilvl="%d"><w:start w:val="1"/><w:numFmt w:val="%s"/><w:lvlText w:val="%s"/><w:lvlJc w:val="left"/><w:pPr><w:ind w:left="%d" w:hanging="360"/></w:pPr>`,
			i, fmtName, text, 720+360*i)
		if font != "" {
			fmt.Fprintf(&b, `<w:rPr><w:rFonts w:ascii="%[1]s" w:hAnsi="%[1]s"/></w:rPr>`, font)
		}
		b.WriteString(`</w:lvl>`)
	}
	b.WriteString(`<w:abstractNum w:abstractNumId="0"><w:multiLevelType w:val="hybridMultilevel"/>`)
	for i, bullet := range []string{"•", "◦", "▪", "–"} {
		lvl(i, "bullet", bullet, "")
	}
	b.WriteString(`</w:abstractNum><w:abstractNum w:abstractNumId="1"><w:multiLevelType w:val="hybridMultilevel"/>`)
	for i, f := range []string{"decimal", "lowerLetter", "lowerRoman", "decimal"} {
		lvl(i, f, fmt.Sprintf("%%%d.", i+1), "")
	}
	b.WriteString(`</w:abstractNum>`)
	for i := 1; i <= len(w.lists); i++ {
		fmt.Fprintf(&b, `<w:num w:numId="%d"><w:abstractNumId w:val="%d"/>`, i, w.listKind(i))
		for l := range 4 {
			fmt.Fprintf(&b, `<w:lvlOverride w:ilvl="%d"><w:startOverride w:val="1"/></w:lvlOverride>`, l)
		}
		b.WriteString(`</w:num>`)
	}
	b.WriteString(`</w:numbering>`)
	return b.String()
}
