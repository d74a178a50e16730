package panelspec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// The seed's documented source form, {"source": "site.seo", "params":
// {"pageId": "$scope.entityId"}}, beside the rich {kind, ...} form. The
// ref names a data adapter or a read tool; which one is the runtime's
// decision (an adapter of that name wins), because only the runtime knows
// what is registered. Here the ref must be a name (never a URL) and the
// params' references must be well formed.

// checkSourceRef validates one {source, params} source.
func (r *run) checkSourceRef(id string, src Source) {
	p := ptr("sources", id)
	name := src.Ref
	switch {
	case name == "":
		r.add(switchboard.CodeSpecAction, "", p+"/source", "a {source, params} source needs the name of a data adapter or read tool", `e.g. "source": "site.seo"`)
		return
	case looksLikeURL(name):
		r.add(switchboard.CodeSpecAction, "", p+"/source", "a source is named, never a URL", "use the name of a data adapter or a read tool")
		return
	case len(name) > 128 || !toolName.MatchString(name):
		r.add(switchboard.CodeSpecAction, "", p+"/source", fmt.Sprintf("%s is not an adapter or tool name", quote(name)), "")
		return
	case r.opts.ToolExists != nil && !r.opts.ToolExists(name) && !r.opts.ToolExists("data."+name+".query"):
		r.add(switchboard.CodeSpecAction, "", p+"/source", fmt.Sprintf("no data adapter or read tool named %s is registered", quote(name)), "")
	}
	params := r.doc.get("sources").get(id).get("params")
	if !params.ok() {
		return
	}
	params.eachString(func(path []string, ref string) {
		r.checkParamRef(id, ref, p+"/params"+pointerOf(path))
	})
}

func pointerOf(path []string) string {
	var b strings.Builder
	for _, t := range path {
		b.WriteByte('/')
		b.WriteString(escapePointer(t))
	}
	return b.String()
}

// ParamRef splits a seed-form reference: "$scope.entityId" is ("scope",
// ["entityId"]); "$state.filter.owner" is ("state", ["filter", "owner"]).
// ok is false for a string that is not a reference (a literal; "$$x" is
// the literal "$x").
func ParamRef(s string) (root string, path []string, ok bool) {
	switch {
	case strings.HasPrefix(s, RefScope):
		root, s = "scope", s[len(RefScope):]
	case strings.HasPrefix(s, RefState):
		root, s = "state", s[len(RefState):]
	default:
		return "", nil, false
	}
	return root, strings.Split(s, "."), true
}

// checkParamRef reports a malformed reference: an unknown "$name." root, an
// empty segment, or a prototype key the runtime would walk into.
func (r *run) checkParamRef(id, s, at string) {
	if !strings.HasPrefix(s, "$") || strings.HasPrefix(s, "$$") {
		return
	}
	root, segs, ok := ParamRef(s)
	if !ok {
		if i := strings.IndexByte(s, '.'); i > 1 && isWord(s[1:i]) {
			r.add(switchboard.CodeSpecAction, "", at, fmt.Sprintf("unknown reference %s", quote(s)),
				didYouMean(s[:i+1], []string{RefScope, RefState})+` (write "$$" for a literal "$")`)
		}
		return // "$5", "$": literals
	}
	for _, seg := range segs {
		switch {
		case seg == "":
			r.add(switchboard.CodeSpecAction, "", at, fmt.Sprintf("reference %s has an empty segment", quote(s)), `write "$`+root+`.name" or "$`+root+`.a.b"`)
			return
		case protoKeys[seg]:
			r.add(switchboard.CodeSpecUnsafe, "", at, fmt.Sprintf("reference %s walks into %s", quote(s), quote(seg)), "")
			return
		}
	}
	if root == "state" && !stateHas(r.doc.get("state"), segs) {
		r.warn(switchboard.CodeSpecAction, "", at, fmt.Sprintf("state has no %s, so the reference is null until an action sets it", strings.Join(segs, ".")), "")
	}
}

func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}

// stateHas reports whether the dot path exists in the state document.
func stateHas(v val, segs []string) bool {
	for _, seg := range segs {
		switch {
		case v.isObj():
			v = v.get(seg)
		case v.isArr():
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= v.len() {
				return false
			}
			v = v.at(i)
		default:
			return false
		}
		if !v.ok() {
			return false
		}
	}
	return true
}
