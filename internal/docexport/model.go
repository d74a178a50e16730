// Package docexport turns a document panel node (the seed's portable
// block model, panelspec.TypeDocument) into a PDF or a DOCX file, and
// serves that as the job-class tool document.export.
//
// The output depends on the document alone: no clock, no map order, no
// randomness reaches the bytes, so the same document gives the same file
// (testdata/*.golden pin it byte for byte). PDF is written with fpdf
// (codeberg.org/go-pdf/fpdf) in the Go fonts (golang.org/x/image/font/gofont,
// embedded as subsets, so Latin, Greek and Cyrillic text prints as
// written); DOCX is WordprocessingML written here with archive/zip and
// fixed zip timestamps, which is small and lets nothing vary.
//
// The block model is validated before it gets here (panelspec bounds
// blocks, table cells, list depth and text); the renderers still read it
// defensively and stop at the same bounds, and the file is refused past
// MaxFileBytes.
package docexport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// Document is one document node's props.
type Document struct {
	Title  string  `json:"title"`
	Blocks []Block `json:"blocks"`
}

// Block is one block of the model; which fields mean something depends on
// Type (see panelspec/schemas/document.json).
type Block struct {
	Type    string   `json:"type"`
	ID      string   `json:"id"`
	Level   int      `json:"level"`   // heading: 1..3
	Text    string   `json:"text"`    // heading
	Runs    []Run    `json:"runs"`    // paragraph, callout
	Ordered bool     `json:"ordered"` // list
	Items   []Item   `json:"items"`   // list
	Header  []string `json:"header"`  // table
	Rows    [][]Cell `json:"rows"`    // table
	Caption string   `json:"caption"` // table, image
	Asset   string   `json:"asset"`   // image
	Alt     string   `json:"alt"`     // image
	Tone    string   `json:"tone"`    // callout: info | success | warning | danger
	Title   string   `json:"title"`   // callout
}

// Run is a piece of text with one style. Text, never markup.
type Run struct {
	Text   string `json:"text"`
	Bold   bool   `json:"bold"`
	Italic bool   `json:"italic"`
	Code   bool   `json:"code"`
	Href   string `json:"href"`
}

// Item is a list item: its runs and a nested list.
type Item struct {
	Runs  []Run  `json:"runs"`
	Items []Item `json:"items"`
}

// Cell is a table cell: a string, number, boolean or null, printed as the
// renderer prints it (numbers as written, null empty). Num marks a number,
// which is right-aligned.
type Cell struct {
	Text string
	Num  bool
}

// UnmarshalJSON keeps a number's text exactly as written.
func (c *Cell) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*c = Cell{}
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Cell{Text: s}
	case string(b) == "true" || string(b) == "false":
		*c = Cell{Text: string(b)}
	case b[0] == '-' || (b[0] >= '0' && b[0] <= '9'):
		*c = Cell{Text: string(b), Num: true}
	default:
		*c = Cell{} // the renderer shows objects and arrays as empty
	}
	return nil
}

// Decode reads a document node's props. Blocks of unknown types are kept
// (and skipped by the renderers), as the browser renderer keeps them.
func Decode(props json.RawMessage) (Document, error) {
	var d Document
	if err := json.Unmarshal(props, &d); err != nil {
		return Document{}, switchboard.Errorf(switchboard.CodeSpecProps, "document props do not decode: %v", err)
	}
	if len(d.Blocks) > panelspec.MaxDocumentBlocks {
		d.Blocks = d.Blocks[:panelspec.MaxDocumentBlocks]
	}
	return d, nil
}

// safeHref is a run's link target when it may be one (http, https or
// mailto, as the browser renderer allows), else "".
func safeHref(h string) string {
	u, err := url.Parse(h)
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return ""
		}
		return u.String()
	case "mailto":
		return u.String()
	}
	return ""
}

// headingLevel clamps a heading's level to 1..3 (2 when unset, as the
// browser renderer draws it).
func headingLevel(l int) int {
	if l < 1 || l > 3 {
		return 2
	}
	return l
}

// listMarker is an item's marker: numbers (then letters, then roman
// numerals) for ordered lists, bullets by depth otherwise.
func listMarker(ordered bool, depth, n int) string {
	if !ordered {
		return [...]string{"•", "◦", "▪", "–"}[(depth-1)%4]
	}
	switch (depth - 1) % 3 {
	case 1:
		return alpha(n) + "."
	case 2:
		return roman(n) + "."
	}
	return fmt.Sprintf("%d.", n)
}

func alpha(n int) string {
	s := ""
	for n > 0 {
		n--
		s = string(rune('a'+n%26)) + s
		n /= 26
	}
	return s
}

func roman(n int) string {
	vals := []int{1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1}
	syms := []string{"m", "cm", "d", "cd", "c", "xc", "l", "xl", "x", "ix", "v", "iv", "i"}
	var b strings.Builder
	for i, v := range vals {
		for n >= v {
			b.WriteString(syms[i])
			n -= v
		}
	}
	return b.String()
}

// toneColor is a callout tone's accent colour (RGB), info by default.
func toneColor(tone string) [3]int {
	switch tone {
	case "success":
		return [3]int{0x1e, 0x7b, 0x34}
	case "warning":
		return [3]int{0xb2, 0x6a, 0x00}
	case "danger":
		return [3]int{0xb0, 0x20, 0x20}
	}
	return [3]int{0x1f, 0x5f, 0xb0}
}

// toneLabel names a tone in words, so a callout's meaning does not rest
// on its colour alone.
func toneLabel(tone string) string {
	switch tone {
	case "success":
		return "Success"
	case "warning":
		return "Warning"
	case "danger":
		return "Important"
	}
	return "Note"
}
