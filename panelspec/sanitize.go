package panelspec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// Stage 6: sanitization. The renderer is the first line of defence (text
// through textContent only, attributes from an allow-list, URLs re-checked);
// this stage makes sure a hostile spec never gets that far:
//
//   - no __proto__, constructor or prototype key anywhere, not even in
//     /state, and no such segment in a field path or column key (the
//     browser walks those paths into objects);
//   - no raw CSS, markup or event-handler props (style, className, html,
//     onClick, ...) in any node's props: the catalog offers fixed scales
//     (gap, tone, width) instead;
//   - URL props pass checkURL (see urlcheck.go);
//   - no active-content tags (<script, <iframe, <svg, <img, ...) in any prop
//     string. Text is rendered as text, so "<b>" or "a < b" are shown
//     literally and allowed; the tags that can run code or load content are
//     refused anyway, because a spec carrying them is an injection attempt
//     and another client (an email, a Markdown view) may not be as careful.
//
// /state is data: only its keys are checked here; it reaches the page
// through form values and table cells, which are text.

var (
	protoKeys = map[string]bool{"__proto__": true, "constructor": true, "prototype": true}

	eventProp = regexp.MustCompile(`^on[A-Z]|^on(click|dblclick|load|error|mouse[a-z]+|pointer[a-z]+|key[a-z]+|focus|blur|change|input|submit|toggle|begin|end|animation[a-z]+|transition[a-z]+|wheel|scroll|drag[a-z]*|drop|copy|cut|paste)$`)

	activeTag = regexp.MustCompile(`(?i)<\s*/?\s*(script|style|iframe|frame|frameset|object|embed|applet|svg|math|link|meta|base|template|img|image|video|audio|source|form|input|button|textarea|select|xml|noscript)\b`)
)

func (r *run) sanitizeStage() {
	from := len(r.issues)
	for _, path := range r.parsed.proto {
		k := path[len(path)-1]
		r.add(switchboard.CodeSpecUnsafe, nodeOf(path), ptr(path...), fmt.Sprintf("key %q is not allowed", k),
			"rename it; __proto__, constructor and prototype are never valid keys")
	}
	path := make([]string, 1, 16) // reused for every node
	path[0] = "props"
	for i, id := range r.ids {
		if ni := &r.info[i]; ni.props.ok() {
			r.sanitizeProps(id, ni, path)
		}
	}
	for _, id := range sortedKeys(r.spec.Actions) {
		a := r.spec.Actions[id]
		if hasActiveTag(a.Confirm) {
			r.add(switchboard.CodeSpecUnsafe, "", ptr("actions", id, "confirm"), "markup tags are not allowed", "write plain text")
		}
	}
	for _, id := range sortedKeys(r.spec.Sources) {
		src := r.spec.Sources[id]
		for _, tok := range strings.Split(src.Path, "/") {
			if protoKeys[unescapePointer(tok)] {
				r.add(switchboard.CodeSpecUnsafe, "", ptr("sources", id, "path"), fmt.Sprintf("path segment %q is not allowed", tok), "")
				break
			}
		}
		if protoKeys[src.Key] {
			r.add(switchboard.CodeSpecUnsafe, "", ptr("sources", id, "key"), fmt.Sprintf("key %q is not allowed", src.Key), "")
		}
	}
	sortIssues(r.issues[from:])
}

// rawProp says what a prop named k would carry (raw CSS, raw markup,
// script or unchecked URLs), or "" for an ordinary prop.
func rawProp(k string) string {
	switch k {
	case "style", "styles", "css", "sx", "class", "className", "classList":
		return "raw CSS"
	case "html", "innerHTML", "outerHTML", "dangerouslySetInnerHTML", "srcdoc", "srcDoc", "markdown", "template":
		return "raw markup"
	case "script":
		return "script"
	case "srcset", "srcSet", "xlink:href":
		return "unchecked URLs"
	}
	return ""
}

// isPathProp reports a prop whose value is a dot path or key into records.
func isPathProp(k string) bool {
	switch k {
	case "path", "key", "field", "hrefKey":
		return true
	}
	return false
}

// unescapePointer decodes one RFC 6901 reference token.
func unescapePointer(tok string) string {
	if !strings.Contains(tok, "~") {
		return tok
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// hasActiveTag reports a tag that can run code or load content.
func hasActiveTag(s string) bool {
	return strings.IndexByte(s, '<') >= 0 && activeTag.MatchString(s)
}

// isEventProp reports an event-handler prop name (onClick, onerror).
func isEventProp(k string) bool {
	return len(k) > 2 && k[0] == 'o' && k[1] == 'n' && eventProp.MatchString(k)
}

func (r *run) sanitizeProps(id string, ni *nodeInfo, path []string) {
	props, e := ni.props, ni.entry
	known := e != nil && !ni.unknown
	var walk func(v val, path []string, key string, inRows bool)
	walk = func(v val, path []string, key string, inRows bool) {
		switch v.kind() {
		case kObj:
			for i := range v.len() {
				c := v.at(i)
				k := c.key()
				p := append(path, k)
				if !inRows {
					if what := rawProp(k); what != "" {
						r.add(switchboard.CodeSpecUnsafe, id, nodePtr(id, p...), fmt.Sprintf("%s props are not allowed (%s)", what, quote(k)),
							"use the node type's own props (gap, tone, width, variant) instead")
						continue
					}
					// A prop the type declares as an action reference
					// ("onSelect": "drill") names a declared action; it is
					// not a handler.
					if isEventProp(k) && !(known && len(p) == 2 && e.refs[k] == "action") {
						r.add(switchboard.CodeSpecUnsafe, id, nodePtr(id, p...), fmt.Sprintf("event handler props are not allowed (%s)", quote(k)),
							"declare an action and reference it from a button")
						continue
					}
				}
				walk(c, p, k, inRows || (known && len(p) == 2 && (e.typ == TypeTable && k == "rows" || e.typ == TypeChart && k == "data")))
			}
		case kArr:
			for i := range v.len() {
				walk(v.at(i), append(path, strconv.Itoa(i)), key, inRows)
			}
		case kStr:
			r.sanitizeString(id, e, v.str(), path, key, known, inRows)
		}
	}
	walk(props, path, "", false)
	if known && e.typ == TypeTable {
		r.tableLinks(id, props)
	}
}

func (r *run) sanitizeString(id string, e *entry, s string, path []string, key string, known, inRows bool) {
	at := func() string { return nodePtr(id, path...) }
	context := ""
	if known && len(path) == 2 && len(e.urls) > 0 {
		context = e.urls[key]
	}
	if context == "" && !inRows && isURLKey(key) {
		context = urlLink
		if key == "src" || strings.HasSuffix(key, "Src") {
			context = urlImage
		}
	}
	if context != "" {
		if why := checkURL(s, context); why != "" {
			r.add(switchboard.CodeSpecUnsafe, id, at(), why, urlSuggestion(context))
		}
		return
	}
	if known && e.typ == TypePreview && len(path) == 2 && key == "code" {
		return // code by design, shown only in the sandboxed preview origin
	}
	if hasActiveTag(s) {
		r.add(switchboard.CodeSpecUnsafe, id, at(), "markup tags that run code or load content are not allowed",
			"write plain text; it is never rendered as HTML")
		return
	}
	if isPathProp(key) && !inRows {
		for rest := s; ; {
			seg, more, found := strings.Cut(rest, ".")
			if protoKeys[seg] {
				r.add(switchboard.CodeSpecUnsafe, id, at(), fmt.Sprintf("path segment %q is not allowed", seg), "")
				return
			}
			if !found {
				break
			}
			rest = more
		}
	}
}

func urlSuggestion(context string) string {
	if context == urlImage {
		return "use an https:// URL, a relative URL or a data:image/png;base64 URL"
	}
	return "use an https:// URL, a relative URL or mailto:"
}

// tableLinks checks the cells of inline rows that link columns render as
// hrefs.
func (r *run) tableLinks(id string, props val) {
	cols, rows := props.get("columns"), props.get("rows")
	if !cols.isArr() || !rows.isArr() {
		return
	}
	for i := range cols.len() {
		cm := cols.at(i)
		if k, _ := cm.strProp("kind"); k != "link" {
			continue
		}
		key, _ := cm.strProp("hrefKey")
		if key == "" {
			key, _ = cm.strProp("key")
		}
		for j := range rows.len() {
			if href, ok := rows.at(j).strProp(key); ok {
				if why := checkURL(href, urlLink); why != "" {
					r.add(switchboard.CodeSpecUnsafe, id, nodePtr(id, "props", "rows", strconv.Itoa(j), key), why, urlSuggestion(urlLink))
				}
			}
		}
	}
}
