package search

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard"
)

// field is one indexed part of a tool; BM25F weighs and length-normalises
// each separately.
type field uint8

const (
	fieldName      field = iota // last name segment: "export" in "deck.export"
	fieldNamespace              // the other segments: "deck"
	fieldSummary                // the declared summary, or nothing
	fieldDescription
	fieldParams    // input-schema property names, at any depth
	fieldParamDocs // their descriptions, titles and enum values
	fieldLearned   // queries that led callers to the tool (Index.SetLearned)
	numFields
)

// Schema walking bounds: a catalog schema is declared by an app we do not
// control, so an enormous or deeply nested one must not blow up indexing.
const (
	maxSchemaDepth = 8
	maxSchemaProps = 256
	maxEnumValues  = 32
)

// texts extracts the indexed text of t per field. Summary is indexed only
// when it says something of its own: a summary derived from the description
// (as the registry stores one when none is declared) would count the first
// sentence twice, which measurably hurts ranking.
func texts(t switchboard.Tool) [numFields][]string {
	var f [numFields][]string
	name := t.Name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		f[fieldNamespace] = []string{name[:i]}
		name = name[i+1:]
	}
	f[fieldName] = []string{name}
	if s := collapseSpace(t.Summary); s != "" && s != derivedSummary(t.Description) {
		f[fieldSummary] = []string{s}
	}
	f[fieldDescription] = []string{t.Description}
	if len(t.InputSchema) > 0 {
		var schema any
		if json.Unmarshal(t.InputSchema, &schema) == nil {
			w := schemaWalker{}
			w.walk(schema, 0)
			f[fieldParams], f[fieldParamDocs] = w.names, w.docs
		}
	}
	return f
}

type schemaWalker struct {
	names, docs []string
	props       int
}

// walk visits the property schemas of s depth-first, in sorted key order so
// the extracted text (and so the catalog fingerprint) does not depend on how
// a store happened to order JSON keys.
func (w *schemaWalker) walk(s any, depth int) {
	m, ok := s.(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if w.props >= maxSchemaProps {
				return
			}
			w.props++
			w.names = append(w.names, k)
			if p, ok := props[k].(map[string]any); ok {
				w.docsOf(p)
			}
			w.walk(props[k], depth+1)
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		w.walk(m[k], depth+1)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if alts, ok := m[k].([]any); ok {
			for _, a := range alts {
				w.walk(a, depth+1)
			}
		}
	}
}

func (w *schemaWalker) docsOf(p map[string]any) {
	for _, k := range []string{"title", "description"} {
		if s, ok := p[k].(string); ok && s != "" {
			w.docs = append(w.docs, s)
		}
	}
	if enum, ok := p["enum"].([]any); ok {
		for i, v := range enum {
			if i == maxEnumValues {
				break
			}
			if s, ok := v.(string); ok {
				w.docs = append(w.docs, s)
			}
		}
	}
}

// summaryMax bounds a derived summary in runes, ellipsis included: deferred
// listings show one line per tool and must stay short.
const summaryMax = 120

// SummaryOf returns the one line that listings and search hits show for t:
// its declared Summary with whitespace collapsed, or else the first sentence
// of its description cut to about 120 characters at a word boundary.
func SummaryOf(t switchboard.Tool) string {
	if s := collapseSpace(t.Summary); s != "" {
		return s
	}
	return derivedSummary(t.Description)
}

func derivedSummary(description string) string {
	return truncate(collapseSpace(firstSentence(description)), summaryMax)
}

// firstSentence returns the text up to the first line break or sentence end:
// a '.', '!' or '?' followed by space and not by a lower-case letter, and
// not ending a common abbreviation ("e.g. a deck" is one sentence).
func firstSentence(s string) string {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n':
			return s[:i]
		case '.', '!', '?':
			if i+1 == len(s) {
				return s
			}
			if s[i+1] != ' ' && s[i+1] != '\t' && s[i+1] != '\r' && s[i+1] != '\n' {
				continue
			}
			if s[i] == '.' && isAbbreviation(s[:i+1]) {
				continue
			}
			next, _ := utf8.DecodeRuneInString(strings.TrimLeft(s[i+1:], " \t\r"))
			if unicode.IsLower(next) {
				continue
			}
			return s[:i+1]
		}
	}
	return s
}

func isAbbreviation(upToDot string) bool {
	lower := strings.ToLower(upToDot)
	for _, a := range []string{"e.g.", "i.e.", "etc.", "vs.", "approx.", "incl.", "no."} {
		if strings.HasSuffix(lower, a) {
			// Only a whole word counts: "video." must not match "no.".
			rest := lower[:len(lower)-len(a)]
			r, _ := utf8.DecodeLastRuneInString(rest)
			if rest == "" || !unicode.IsLetter(r) {
				return true
			}
		}
	}
	return false
}

func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// truncate cuts s to at most n runes, at a word boundary when one is near,
// marking the cut with an ellipsis.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut, runes := len(s), 0
	for i := range s {
		if runes == n-1 { // leave room for the ellipsis
			cut = i
			break
		}
		runes++
	}
	if sp := strings.LastIndexByte(s[:cut], ' '); sp > cut*2/3 {
		cut = sp
	}
	return strings.TrimRight(s[:cut], " ,;:-") + "…"
}
