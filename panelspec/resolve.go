package panelspec

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// Stage 4: action and source resolution. Every reference must name
// something declared in the spec: a button's action, a form's bind and
// submit, a table's or list's source, an action's source. Actions are
// declared effects with a kind, never URLs, so a panel can only do what its
// actions say, and each of those goes through the broker.

var (
	actionKinds = []string{ActionMutate, ActionTool, ActionRefresh}
	sourceKinds = []string{SourceState, SourceTool, SourceAdapter}
	mutateOps   = []string{OpCreate, OpUpdate, OpDelete}
	// toolName matches a registered tool name (dot-namespaced).
	toolName    = regexp.MustCompile(`^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$`)
	adapterName = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)
)

const notURL = "actions are declared, never URLs: declare an action under /actions and use its id"

func (r *run) resolveStage() {
	s := r.spec
	sourceIDs, actionIDs := sortedKeys(s.Sources), sortedKeys(s.Actions)

	for _, id := range sourceIDs {
		src := s.Sources[id]
		p := ptr("sources", id)
		if src.Kind == "" && r.doc.get("sources").get(id).get("source").ok() {
			r.checkSourceRef(id, src)
			continue
		}
		switch src.Kind {
		case SourceState:
			if src.Path != "" && !strings.HasPrefix(src.Path, "/") {
				r.add(switchboard.CodeSpecAction, "", p+"/path", "a state source's path is a JSON pointer into /state", fmt.Sprintf("use %q", "/"+src.Path))
			} else if len(s.State) == 0 && src.Path != "" {
				r.warn(switchboard.CodeSpecAction, "", p+"/path", "state is empty, so this source starts empty", "")
			}
		case SourceTool:
			r.checkTool(src.Tool, p+"/tool", "")
		case SourceAdapter:
			if !adapterName.MatchString(src.Adapter) {
				r.add(switchboard.CodeSpecAction, "", p+"/adapter", "an adapter source needs the name of a data adapter", "")
			}
		case "":
			// missing kind: reported when decoding
		default:
			r.add(switchboard.CodeSpecAction, "", p+"/kind", fmt.Sprintf("unknown source kind %s", quote(src.Kind)), didYouMean(src.Kind, sourceKinds))
		}
	}

	for _, id := range actionIDs {
		a := s.Actions[id]
		p := ptr("actions", id)
		if a.Kind == ActionMutate || a.Kind == ActionRefresh {
			a.Source = r.sourceByRef(a.Source, sourceIDs, p+"/source")
			s.Actions[id] = a
		}
		switch a.Kind {
		case ActionMutate:
			r.checkRef(a.Source, "source", sourceIDs, "", p+"/source")
			switch {
			case a.Op == "":
				r.add(switchboard.CodeSpecAction, "", p+"/op", "a mutate action needs an op", oneOf(mutateOps))
			case !contains(mutateOps, a.Op):
				r.add(switchboard.CodeSpecAction, "", p+"/op", fmt.Sprintf("unknown op %s", quote(a.Op)), didYouMean(a.Op, mutateOps))
			case a.Op == OpDelete && !a.Destructive:
				r.add(switchboard.CodeSpecAction, "", p+"/destructive", "a delete must be declared destructive", `set "destructive": true`)
			}
		case ActionTool:
			r.checkTool(a.Tool, p+"/tool", "")
		case ActionRefresh:
			r.checkRef(a.Source, "source", sourceIDs, "", p+"/source")
		case "":
		default:
			if looksLikeURL(a.Kind) {
				r.add(switchboard.CodeSpecAction, "", p+"/kind", notURL, oneOf(actionKinds))
			} else {
				r.add(switchboard.CodeSpecAction, "", p+"/kind", fmt.Sprintf("unknown action kind %s", quote(a.Kind)), didYouMean(a.Kind, actionKinds))
			}
		}
	}

	for i, id := range r.ids {
		ni := &r.info[i]
		e := ni.entry
		if e == nil || ni.unknown || len(e.refs) == 0 {
			continue
		}
		props := ni.props
		for _, prop := range e.refNames {
			what := e.refs[prop]
			v, ok := props.strProp(prop)
			if !ok {
				continue // absent or not a string: the props stage said so
			}
			ids := sourceIDs
			if what == "action" {
				ids = actionIDs
			}
			if !contains(ids, v) {
				r.checkRef(v, what, ids, id, nodePtr(id, "props", prop))
			}
		}
		if e.typ == TypeFieldForm {
			bind, _ := props.strProp("bind")
			submit, _ := props.strProp("submit")
			if a, ok := s.Actions[submit]; ok && a.Kind == ActionMutate && bind != "" && a.Source != bind {
				r.add(switchboard.CodeSpecAction, id, nodePtr(id, "props", "submit"),
					fmt.Sprintf("action %s mutates source %s but the form edits %s", quote(submit), quote(a.Source), quote(bind)),
					"submit with an action on the form's own source")
			}
		}
	}
}

// sourceByRef returns the key of the source an action names: a key as is,
// or the one seed-form source whose ref it is (the seed writes "source":
// "site.seo", the ref, where a key would do). The validated spec carries the
// key, so the runtime looks sources up one way. A ref two sources share is
// ambiguous and refused.
func (r *run) sourceByRef(name string, sourceIDs []string, p string) string {
	if name == "" || contains(sourceIDs, name) {
		return name
	}
	var keys []string
	for _, k := range sourceIDs {
		if r.spec.Sources[k].Ref == name {
			keys = append(keys, k)
		}
	}
	switch len(keys) {
	case 0:
		return name // checkRef reports it
	case 1:
		return keys[0]
	}
	r.add(switchboard.CodeSpecAction, "", p, fmt.Sprintf("source ref %s is the ref of sources %s and %s", quote(name), quote(keys[0]), quote(keys[1])),
		"name the source by its key: "+oneOf(keys))
	return keys[0]
}

// checkRef reports a reference to an undeclared action or source.
func (r *run) checkRef(ref, what string, declared []string, nodeID, p string) {
	if ref == "" {
		r.add(switchboard.CodeSpecAction, nodeID, p, fmt.Sprintf("missing %s id", what), suggestDeclared(what, declared))
		return
	}
	if contains(declared, ref) {
		return
	}
	if what == "action" && looksLikeURL(ref) {
		r.add(switchboard.CodeSpecAction, nodeID, p, notURL, suggestDeclared(what, declared))
		return
	}
	sug := ""
	if c := closest(ref, declared); c != "" {
		sug = "did you mean " + quote(c) + "?"
	} else {
		sug = suggestDeclared(what, declared)
	}
	r.add(switchboard.CodeSpecAction, nodeID, p, fmt.Sprintf("%s %s is not declared", what, quote(ref)), sug)
}

func suggestDeclared(what string, declared []string) string {
	if len(declared) == 0 {
		return fmt.Sprintf("declare it under /%ss", what)
	}
	return oneOf(declared)
}

func (r *run) checkTool(name, p, nodeID string) {
	switch {
	case name == "":
		r.add(switchboard.CodeSpecAction, nodeID, p, "missing tool name", "")
	case looksLikeURL(name):
		r.add(switchboard.CodeSpecAction, nodeID, p, "a tool is named, never a URL", "use the registered tool name, e.g. \"tasks.create\"")
	case !toolName.MatchString(name) || len(name) > 128:
		r.add(switchboard.CodeSpecAction, nodeID, p, fmt.Sprintf("%s is not a tool name", quote(name)), "")
	case r.opts.ToolExists != nil && !r.opts.ToolExists(name):
		r.add(switchboard.CodeSpecAction, nodeID, p, fmt.Sprintf("no tool named %s is registered", quote(name)), "")
	}
}

// looksLikeURL is true for anything with a scheme or a path: a reference
// that was meant as a link, not an id.
func looksLikeURL(s string) bool {
	n := normalizeURL(s)
	return strings.Contains(n, "/") || strings.Contains(n, ":") || strings.HasPrefix(n, "#")
}
