package panelspec

import (
	"fmt"
	"strconv"

	"github.com/switchboardhq/switchboard"
)

// Documents: the seed's portable block model as one node type. The schema
// says each block's shape; the rules here bound what a schema bounds badly
// or expensively (a table's cells, a list's depth, the whole document's
// blocks) before the schema runs, and refuse text that would mean
// different things to different readers: control characters (which XML,
// and so DOCX, cannot carry) and bidirectional overrides (which reorder
// what a reader sees), and images given by URL instead of asset id.

// TypeDocument is the document node type.
const TypeDocument = "document"

// Document budgets.
const (
	MaxDocumentBlocks = 500
	MaxTableCells     = 2000 // rows × columns of one table
	MaxListDepth      = 4
)

// documentBudget reports a document over its budgets; true means the
// schema check should be skipped.
func (r *run) documentBudget(id string, props val) bool {
	blocks := props.get("blocks")
	if !blocks.isArr() {
		return false
	}
	over := false
	if blocks.len() > MaxDocumentBlocks {
		r.add(switchboard.CodeSpecBudget, id, nodePtr(id, "props", "blocks"), fmt.Sprintf("document has %d blocks, over the budget of %d", blocks.len(), MaxDocumentBlocks),
			"split it into several documents")
		return true
	}
	for i := range blocks.len() {
		b := blocks.at(i)
		at := func(k ...string) string {
			return nodePtr(id, append([]string{"props", "blocks", strconv.Itoa(i)}, k...)...)
		}
		switch typ, _ := b.strProp("type"); typ {
		case "table":
			rows := b.get("rows")
			if !rows.isArr() {
				continue
			}
			cells := 0
			for j := range rows.len() {
				if row := rows.at(j); row.isArr() {
					cells += row.len()
				}
			}
			if rows.len() > 200 || cells > MaxTableCells {
				r.add(switchboard.CodeSpecBudget, id, at("rows"), fmt.Sprintf("table has %d rows and %d cells; at most 200 rows and %d cells", rows.len(), cells, MaxTableCells),
					"summarise the table, or attach the full data as a file")
				over = true
			}
		case "list":
			if p := deepItem(b.get("items"), 1, []string{"items"}); p != nil {
				r.add(switchboard.CodeSpecBudget, id, at(p...), fmt.Sprintf("list nests deeper than %d levels", MaxListDepth), "flatten the list")
				over = true
			}
		}
	}
	return over
}

// deepItem returns the path of the first list level past MaxListDepth.
func deepItem(items val, depth int, path []string) []string {
	if !items.isArr() {
		return nil
	}
	if depth > MaxListDepth {
		return path
	}
	for i := range items.len() {
		if p := deepItem(items.at(i).get("items"), depth+1, append(path, strconv.Itoa(i), "items")); p != nil {
			return p
		}
	}
	return nil
}

// documentRules checks what the schema cannot: text, image references and
// block ids.
func (r *run) documentRules(id string, props val) {
	blocks := props.get("blocks")
	if !blocks.isArr() {
		return
	}
	ids := map[string]bool{}
	for i := range blocks.len() {
		b := blocks.at(i)
		at := func(k string) string { return nodePtr(id, "props", "blocks", strconv.Itoa(i), k) }
		if bid, ok := b.strProp("id"); ok {
			if ids[bid] {
				r.add(switchboard.CodeSpecProps, id, at("id"), fmt.Sprintf("two blocks have id %s", quote(bid)), "give each block its own id")
			}
			ids[bid] = true
		}
		if typ, _ := b.strProp("type"); typ == "image" {
			if a, ok := b.strProp("asset"); ok && looksLikeURL(a) {
				r.add(switchboard.CodeSpecUnsafe, id, at("asset"), "a document image is an asset id, not a URL", "upload the image as an asset and name its id")
			}
		}
		b.eachString(func(path []string, text string) {
			if what := hiddenChar(text); what != "" {
				r.add(switchboard.CodeSpecUnsafe, id, nodePtr(id, append([]string{"props", "blocks", strconv.Itoa(i)}, path...)...), "text contains "+what,
					"remove it; write plain text (tabs and newlines are fine)")
			}
		})
	}
}

// hiddenChar names a character a document must not carry, or "".
func hiddenChar(s string) string {
	for _, c := range s {
		switch {
		case c == '\t' || c == '\n':
		case c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0):
			return fmt.Sprintf("a control character (U+%04X)", c)
		case c >= 0x202a && c <= 0x202e, c >= 0x2066 && c <= 0x2069:
			return fmt.Sprintf("a bidirectional override (U+%04X)", c)
		case c == 0xfffe || c == 0xffff:
			return fmt.Sprintf("a non-character (U+%04X)", c)
		}
	}
	return ""
}
