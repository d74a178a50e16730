package panelspec

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard"
)

// Stage 1: parse and migrate. The strict parser turns bytes into plain
// values; an older version is migrated; the IR envelope (top-level keys,
// node, source and action shapes) is decoded into a Spec. Envelope
// mistakes are SPEC_PARSE issues but do not stop the later stages: only
// input that cannot be read at all does.

var (
	topKeys    = []string{"v", "origin", "root", "sources", "state", "nodes", "actions"}
	nodeKeys   = []string{"type", "props", "children"}
	sourceKeys = []string{"kind", "path", "tool", "input", "adapter", "query", "key", "source", "params", "schema"}
	// refKeys are the keys the seed's {source, params} form allows.
	refKeys    = []string{"source", "params", "key", "schema"}
	actionKeys = []string{"kind", "source", "op", "tool", "input", "destructive", "confirm"}
)

// parse runs stage 1 and reports whether the later stages can run.
func (r *run) parse(raw []byte) bool {
	if len(raw) > r.lim.MaxBytes {
		r.add(switchboard.CodeSpecBudget, "", "", fmt.Sprintf("spec is %d bytes, over the limit of %d", len(raw), r.lim.MaxBytes),
			"split the panel or move bulk data into a source")
		return false
	}
	if !utf8.Valid(raw) {
		off := 0
		for off < len(raw) {
			c, n := utf8.DecodeRune(raw[off:])
			if c == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		r.add(switchboard.CodeSpecParse, "", "", fmt.Sprintf("invalid UTF-8 at byte %d", off), "send the spec as UTF-8")
		return false
	}
	// One copy of the input, as a string: parsed strings are slices of it.
	// The spec's raw props are copied out of it once parsing succeeded.
	ps, fail := parseStrict(string(raw), r.lim.MaxJSONDepth, 4*r.lim.MaxNodes, r.longLimit())
	if fail != nil {
		r.add(fail.code, "", fail.pointer, fail.msg, "")
		return false
	}
	done := false
	defer func() {
		if !done {
			ps.release()
		}
	}()
	doc := ps.root()
	if !doc.isObj() {
		r.add(switchboard.CodeSpecParse, "", "", "a spec must be a JSON object", `{"v": 1, "origin": "agent", "root": "...", "nodes": {...}}`)
		return false
	}
	ver := doc.get("v")
	switch {
	case !ver.ok():
		r.add(switchboard.CodeSpecParse, "", "/v", "missing version", fmt.Sprintf(`add "v": %d`, Version))
		return false
	case ver.kind() == kNum && ver.num() == 0:
		migrated, fail := migrateV0(doc, 4*r.lim.MaxNodes)
		if fail != nil {
			r.add(fail.code, "", fail.pointer, fail.msg, "")
			return false
		}
		// Nothing recorded while parsing is at its version 1 place; the
		// migrated tree is plain memory, so the parsed one goes back.
		ps.release()
		ps = &parsed{d: migrated.d, top: *migrated.v}
		doc = ps.root()
		ps.proto, ps.long = scan(doc, r.longLimit())
	case ver.kind() != kNum || ver.num() != Version:
		r.add(switchboard.CodeSpecParse, "", "/v", fmt.Sprintf("unsupported version %s", ver.appendJSON(nil)), fmt.Sprintf(`use "v": %d`, Version))
		return false
	}
	r.doc, r.parsed = doc, ps
	done = true // released by Validate
	r.decode()
	return true
}

// longLimit is the length past which the parser records a string for the
// budget stage.
func (r *run) longLimit() int { return min(r.lim.MaxString, r.lim.MaxDataURL) }

// scan finds what the parser records (prototype keys, long strings and
// keys) by walking a document; used when the document was rewritten after
// parsing (migration).
func scan(v val, longLimit int) (proto [][]string, long []longValue) {
	var path []string
	var walk func(v val)
	walk = func(v val) {
		switch v.kind() {
		case kStr:
			if s := v.str(); len(s) > longLimit {
				long = append(long, longValue{path: append([]string(nil), path...), n: len(s), data: strings.HasPrefix(s, "data:")})
			}
		case kObj:
			for i := range v.len() {
				c := v.at(i)
				k := c.key()
				path = append(path, k)
				if len(k) > longLimit || len(k) > maxKeyBytes {
					long = append(long, longValue{path: append([]string(nil), path...), n: len(k), isKey: true})
				}
				if protoKeys[k] {
					proto = append(proto, append([]string(nil), path...))
				}
				walk(c)
				path = path[:len(path)-1]
			}
		case kArr:
			for i := range v.len() {
				path = append(path, strconv.Itoa(i))
				walk(v.at(i))
				path = path[:len(path)-1]
			}
		}
	}
	walk(v)
	return proto, long
}

// decode fills r.spec from r.doc.
func (r *run) decode() {
	doc := r.doc
	s := &Spec{V: Version}
	r.spec = s
	r.envelope(doc, loc{}, topKeys, "top-level")
	if r.opts.ForceOrigin != "" {
		s.Origin = r.opts.ForceOrigin
	} else if o, ok := doc.strProp("origin"); ok && o != OriginHost && o != OriginAgent {
		r.add(switchboard.CodeSpecParse, "", "/origin", fmt.Sprintf("origin must be %q or %q", OriginHost, OriginAgent), didYouMean(o, []string{OriginHost, OriginAgent}))
	} else {
		s.Origin = r.str(doc, "origin", loc{}, true)
	}
	s.Root = r.str(doc, "root", loc{}, false)

	if st := doc.get("state"); st.ok() {
		if st.isObj() {
			s.State = r.keep(st)
		} else {
			r.add(switchboard.CodeSpecParse, "", "/state", "state must be an object", "")
		}
	}

	nodes := r.object(doc, "nodes", true)
	members := make([]val, nodes.size())
	for i := range members {
		members[i] = nodes.at(i)
	}
	sort.Slice(members, func(i, j int) bool { return members[i].key() < members[j].key() })
	r.ids = make([]string, len(members))
	for i, m := range members {
		r.ids[i] = m.key()
	}
	s.Nodes = make(map[string]Node, len(members))
	r.info = make([]nodeInfo, len(members))
	for i, m := range members {
		r.decodeNode(m, &r.info[i])
	}

	sources := r.object(doc, "sources", false)
	if sources.size() > 0 {
		s.Sources = make(map[string]Source, sources.size())
	}
	for i := range sources.size() {
		sv := sources.at(i)
		id := sv.key()
		at := loc{"sources", id, ""}
		r.checkID(at, "source")
		if !r.envelope(sv, at, sourceKeys, "source") {
			continue
		}
		if ref := sv.get("source"); ref.ok() {
			s.Sources[id] = r.decodeRef(sv, at)
			continue
		}
		s.Sources[id] = Source{
			Kind:    r.str(sv, "kind", at, true),
			Path:    r.str(sv, "path", at, false),
			Tool:    r.str(sv, "tool", at, false),
			Input:   r.raw(sv, "input", at),
			Adapter: r.str(sv, "adapter", at, false),
			Query:   r.raw(sv, "query", at),
			Key:     r.str(sv, "key", at, false),
			Schema:  r.raw(sv, "schema", at),
		}
	}

	actions := r.object(doc, "actions", false)
	if actions.size() > 0 {
		s.Actions = make(map[string]Action, actions.size())
	}
	for i := range actions.size() {
		av := actions.at(i)
		id := av.key()
		at := loc{"actions", id, ""}
		r.checkID(at, "action")
		if !r.envelope(av, at, actionKeys, "action") {
			continue
		}
		a := Action{
			Kind:    r.str(av, "kind", at, true),
			Source:  r.str(av, "source", at, false),
			Op:      r.str(av, "op", at, false),
			Tool:    r.str(av, "tool", at, false),
			Input:   r.raw(av, "input", at),
			Confirm: r.str(av, "confirm", at, false),
		}
		if d := av.get("destructive"); d.ok() {
			if d.kind() != kBool {
				r.add(switchboard.CodeSpecParse, "", at.ptr("destructive"), "destructive must be a boolean", "")
			}
			a.Destructive = d.boolean()
		}
		s.Actions[id] = a
	}
}

// decodeRef decodes the seed's source form {source, params, key?}. Mixing
// it with the rich form's keys is refused: one source, one meaning.
func (r *run) decodeRef(sv val, at loc) Source {
	for i := range sv.len() {
		if k := sv.at(i).key(); !contains(refKeys, k) && contains(sourceKeys, k) {
			r.add(switchboard.CodeSpecParse, "", at.ptr(k), fmt.Sprintf("%s belongs to the {kind, ...} form; a {source, params} source takes only source, params, key and schema", quote(k)),
				"drop "+quote(k)+", or drop source and params and use the kind form")
		}
	}
	return Source{
		Ref:    r.str(sv, "source", at, true),
		Params: r.raw(sv, "params", at),
		Key:    r.str(sv, "key", at, false),
		Schema: r.raw(sv, "schema", at),
	}
}

// size is the member count of an object, 0 when absent.
func (x val) size() int {
	if !x.ok() {
		return 0
	}
	return x.len()
}

func (r *run) decodeNode(nv val, ni *nodeInfo) {
	id := nv.key()
	at := loc{"nodes", id, id}
	r.checkID(at, "node")
	if !r.envelope(nv, at, nodeKeys, "node") {
		ni.broken = true
		r.spec.Nodes[id] = Node{}
		return
	}
	n := Node{Type: r.str(nv, "type", at, true)}
	if n.Type == "" {
		ni.broken = true
	}
	if pv := nv.get("props"); pv.ok() && pv.kind() != kNull { // null props mean none
		if pv.isObj() {
			ni.props = pv
			n.Props = r.keep(pv)
		} else {
			r.add(switchboard.CodeSpecParse, id, at.ptr("props"), "props must be an object", "")
		}
	}
	if cv := nv.get("children"); cv.ok() {
		if cv.kind() != kArr {
			r.add(switchboard.CodeSpecParse, id, at.ptr("children"), "children must be an array of node ids", "")
		} else if cv.len() > 0 {
			n.Children = r.childSlice(cv.len())
		}
		for i := range cv.size() {
			if cv.kind() != kArr {
				break
			}
			c := cv.at(i)
			if c.kind() != kStr {
				r.add(switchboard.CodeSpecParse, id, nodePtr(id, "children", strconv.Itoa(i)), "a child must be a node id (a string)", "")
				continue
			}
			n.Children = append(n.Children, c.str())
		}
	}
	r.spec.Nodes[id] = n
}

// childSlice hands out empty slices with room for n ids from one shared
// chunk, so decoding costs one allocation for all children lists, not one
// per container. Each slice is capped: appending to it reallocates.
func (r *run) childSlice(n int) []string {
	if cap(r.childBuf)-len(r.childBuf) < n {
		r.childBuf = make([]string, 0, max(n, len(r.ids)))
	}
	start := len(r.childBuf)
	r.childBuf = r.childBuf[:start+n]
	return r.childBuf[start : start : start+n]
}

// loc names an object of the envelope: section ("nodes", "sources",
// "actions" or "" for the top level), its id, and the node id for issues.
// Pointers are built from it only when there is something to report.
type loc struct{ section, id, nodeID string }

func (l loc) ptr(key string) string {
	if l.section == "" {
		return ptr(key)
	}
	return ptr(l.section, l.id, key)
}

func (l loc) self() string {
	if l.section == "" {
		return ""
	}
	return ptr(l.section, l.id)
}

// envelope checks that v is an object with only the allowed keys.
func (r *run) envelope(v val, at loc, allowed []string, what string) bool {
	if !v.isObj() {
		r.add(switchboard.CodeSpecParse, at.nodeID, at.self(), fmt.Sprintf("a %s must be an object", what), "")
		return false
	}
	for i := range v.len() {
		if k := v.at(i).key(); !contains(allowed, k) {
			r.add(switchboard.CodeSpecParse, at.nodeID, at.ptr(k), fmt.Sprintf("unknown %s key %s", what, quote(k)), didYouMean(k, allowed))
		}
	}
	return true
}

// object returns doc's member key as an object, reporting any other type.
func (r *run) object(doc val, key string, required bool) val {
	v := doc.get(key)
	if !v.ok() {
		if required {
			r.add(switchboard.CodeSpecParse, "", ptr(key), fmt.Sprintf("missing %q", key), fmt.Sprintf(`add "%s": {}`, key))
		}
		return val{}
	}
	if !v.isObj() {
		r.add(switchboard.CodeSpecParse, "", ptr(key), fmt.Sprintf("%q must be an object", key), "")
		return val{}
	}
	return v
}

// str returns m's member key as a string, reporting a missing or
// non-string value.
func (r *run) str(m val, key string, at loc, required bool) string {
	v := m.get(key)
	if !v.ok() {
		if required {
			r.add(switchboard.CodeSpecParse, at.nodeID, at.ptr(key), fmt.Sprintf("missing %q", key), "")
		}
		return ""
	}
	if v.kind() != kStr {
		r.add(switchboard.CodeSpecParse, at.nodeID, at.ptr(key), fmt.Sprintf("%q must be a string", key), "")
		return ""
	}
	return v.str()
}

// raw returns m's member key, which must be an object, as raw JSON.
func (r *run) raw(m val, key string, at loc) json.RawMessage {
	v := m.get(key)
	if !v.ok() {
		return nil
	}
	if !v.isObj() {
		r.add(switchboard.CodeSpecParse, "", at.ptr(key), fmt.Sprintf("%q must be an object", key), "")
		return nil
	}
	return r.keep(v)
}

// keep returns an object the IR keeps verbatim: the source text the parser
// kept (copied into one buffer shared by the whole spec, so the spec never
// aliases the caller's input), or the object encoded. Each slice is capped:
// appending to it reallocates.
func (r *run) keep(v val) json.RawMessage {
	src := v.raw()
	if src == "" {
		return v.appendJSON(nil)
	}
	if cap(r.kept)-len(r.kept) < len(src) {
		r.kept = make([]byte, 0, max(r.parsed.kept, len(src)))
	}
	start := len(r.kept)
	r.kept = append(r.kept, src...)
	return r.kept[start:len(r.kept):len(r.kept)]
}

// checkID reports an id that is not a short plain identifier. Ids end up in
// JSON pointers, DOM attributes and log lines, so they stay boring.
func (r *run) checkID(at loc, what string) {
	if validID(at.id) {
		return
	}
	r.add(switchboard.CodeSpecParse, at.nodeID, at.self(), fmt.Sprintf("%s id %s must be 1-64 letters, digits, '_', '-' or '.' and start with a letter, digit or '_'", what, quote(at.id)), "")
}

func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case (c == '-' || c == '.') && i > 0:
		default:
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
