package panelspec

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/switchboardhq/switchboard"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Stage 2: catalog membership. A node whose type the catalog does not know
// becomes a placeholder that keeps the original type and props, so a spec
// written against a newer or richer catalog still renders (with a visible
// stand-in) and loses nothing when it is saved again.
func (r *run) catalogStage() {
	ph := r.cat.lookup(TypePlaceholder)
	for i, id := range r.ids {
		ni := &r.info[i]
		if ni.broken {
			continue
		}
		n := r.spec.Nodes[id]
		if e := r.cat.lookup(n.Type); e != nil {
			ni.entry = e
			continue
		}
		types := r.cat.Types()
		types = slicesDelete(types, TypePlaceholder)
		r.warn(switchboard.CodeSpecUnknownType, id, nodePtr(id, "type"),
			fmt.Sprintf("unknown node type %s; kept as a placeholder", quote(n.Type)), didYouMean(n.Type, types))
		props := n.Props
		if len(props) == 0 {
			props = []byte("{}")
		}
		n.Props = append(append(appendJSONString([]byte(`{"originalType":`), n.Type), `,"originalProps":`...), props...)
		n.Props = append(n.Props, '}')
		n.Type = TypePlaceholder
		r.spec.Nodes[id] = n
		ni.entry, ni.unknown = ph, true
	}
}

func slicesDelete(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// Stage 3: per-node props, against the catalog schema of the node's type,
// then the few rules a schema cannot say well (children on a leaf, tab
// labels per child, field options per field kind).
func (r *run) propsStage() {
	for i, id := range r.ids {
		ni := &r.info[i]
		e := ni.entry
		if e == nil || ni.unknown {
			continue
		}
		props := ni.props
		if !props.ok() {
			props = emptyObject
		}
		if e.typ == TypeChart && r.chartBudget(id, props) || e.typ == TypeDocument && r.documentBudget(id, props) {
			continue
		}
		if err := e.check(props); err != nil {
			r.schemaIssues(id, e, err)
		}
		n := r.spec.Nodes[id]
		if !e.children && len(n.Children) > 0 {
			r.add(switchboard.CodeSpecProps, id, nodePtr(id, "children"), fmt.Sprintf("a %s node takes no children", e.typ),
				"wrap it and its siblings in a stack, row or column")
		}
		switch e.typ {
		case TypeTabs:
			if labels := props.get("labels"); labels.isArr() && labels.len() != len(n.Children) {
				r.add(switchboard.CodeSpecProps, id, nodePtr(id, "props", "labels"),
					fmt.Sprintf("tabs has %d labels but %d children", labels.len(), len(n.Children)), "give exactly one label per child, in order")
			}
		case TypeFieldForm:
			r.fieldRules(id, props)
		case TypeChart:
			r.chartRules(id, props)
		case TypeProgress:
			r.progressRules(id, props)
		case TypeDocument:
			r.documentRules(id, props)
		}
	}
}

// Props a field may carry only for some kinds.
var fieldKindProps = map[string][]string{
	"options":   {"select"},
	"min":       {"number"},
	"max":       {"number"},
	"step":      {"number"},
	"minLength": {"text"},
	"maxLength": {"text"},
	"multiline": {"text"},
}

func (r *run) fieldRules(id string, props val) {
	fields := props.get("fields")
	if !fields.ok() {
		r.formFromSource(id, props)
		return
	}
	if !fields.isArr() {
		return
	}
	var seen map[string]bool
	for i := range fields.len() {
		fm := fields.at(i)
		if !fm.isObj() {
			continue
		}
		at := func(k string) string { return nodePtr(id, "props", "fields", strconv.Itoa(i), k) }
		kindName, _ := fm.strProp("kind")
		if path, ok := fm.strProp("path"); ok {
			if seen[path] {
				r.add(switchboard.CodeSpecProps, id, at("path"), fmt.Sprintf("two fields edit path %s", quote(path)), "give each field its own path")
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[path] = true
		}
		for j := range fm.len() {
			k := fm.at(j).key()
			kinds, limited := fieldKindProps[k]
			if limited && kindName != "" && !contains(kinds, kindName) {
				r.add(switchboard.CodeSpecProps, id, at(k), fmt.Sprintf("%q applies only to %s fields, not %s", k, strings.Join(kinds, "/"), kindName),
					fmt.Sprintf("remove %q or use kind %q", k, kinds[0]))
			}
		}
		if lo, ok := fm.numProp("min"); ok {
			if hi, ok := fm.numProp("max"); ok && lo > hi {
				r.add(switchboard.CodeSpecProps, id, at("min"), "min is greater than max", "swap min and max")
			}
		}
		if lo, ok := fm.numProp("minLength"); ok {
			if hi, ok := fm.numProp("maxLength"); ok && lo > hi {
				r.add(switchboard.CodeSpecProps, id, at("minLength"), "minLength is greater than maxLength", "swap them")
			}
		}
		if opts := fm.get("options"); opts.isArr() {
			values := map[any]bool{}
			for j := range opts.len() {
				if v := opts.at(j).get("value"); v.ok() && v.kind() != kObj && v.kind() != kArr {
					if values[v.scalar()] {
						r.add(switchboard.CodeSpecProps, id, at("options")+"/"+strconv.Itoa(j)+"/value", "duplicate option value", "give each option its own value")
					}
					values[v.scalar()] = true
				}
			}
		}
	}
}

// schemaIssues turns a jsonschema/v6 validation error into issues: one per
// leaf error, each with a pointer into the node's props and, where it can,
// the nearest valid alternative.
func (r *run) schemaIssues(id string, e *entry, err error) {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		r.add(switchboard.CodeSpecProps, id, nodePtr(id, "props"), "props do not validate: "+err.Error(), "")
		return
	}
	pr := message.NewPrinter(language.English)
	from := len(r.issues)
	defer func() { sortIssues(r.issues[from:]) }()
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		switch v.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			// Alternatives: one issue listing what each would need.
			var alts []string
			for _, c := range leaves(v) {
				alts = append(alts, c.ErrorKind.LocalizedString(pr))
			}
			r.add(switchboard.CodeSpecProps, id, propsPtr(id, v.InstanceLocation), v.ErrorKind.LocalizedString(pr),
				"satisfy one of: "+strings.Join(dedupe(alts), "; "))
			return
		}
		if len(v.Causes) == 0 {
			r.leafIssue(id, e, v, pr)
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(verr)
}

func leaves(v *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(v.Causes) == 0 {
		return []*jsonschema.ValidationError{v}
	}
	var out []*jsonschema.ValidationError
	for _, c := range v.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func (r *run) leafIssue(id string, e *entry, v *jsonschema.ValidationError, pr *message.Printer) {
	at := propsPtr(id, v.InstanceLocation)
	switch k := v.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		allowed := propNamesAt(e.doc, v.InstanceLocation)
		for _, name := range sorted(k.Properties) {
			r.add(switchboard.CodeSpecProps, id, at+"/"+escapePointer(name),
				fmt.Sprintf("unknown prop %s for %s", quote(name), e.typ), didYouMean(name, allowed))
		}
	case *kind.Required:
		for _, name := range sorted(k.Missing) {
			r.add(switchboard.CodeSpecProps, id, at, fmt.Sprintf("missing required prop %s", quote(name)), fmt.Sprintf("add %q", name))
		}
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			want = append(want, fmt.Sprint(w))
		}
		got, _ := k.Got.(string)
		r.add(switchboard.CodeSpecProps, id, at, fmt.Sprintf("value %s is not allowed", valueText(k.Got)), didYouMean(got, want))
	case *kind.Const:
		r.add(switchboard.CodeSpecProps, id, at, k.LocalizedString(pr), fmt.Sprintf("use %v", k.Want))
	case *kind.Type:
		r.add(switchboard.CodeSpecProps, id, at, fmt.Sprintf("expected %s, got %s", strings.Join(k.Want, " or "), k.Got), "")
	default:
		r.add(switchboard.CodeSpecProps, id, at, v.ErrorKind.LocalizedString(pr), "")
	}
}

func valueText(v any) string {
	if s, ok := v.(string); ok {
		return quote(s)
	}
	return truncate(fmt.Sprint(v), 60)
}

func propsPtr(id string, loc []string) string {
	return nodePtr(id, append([]string{"props"}, loc...)...)
}

// propNamesAt lists the property names the schema allows at an instance
// location, following properties, items and additionalProperties down and
// merging the branches of allOf/anyOf/oneOf/then/else.
func propNamesAt(doc any, loc []string) []string {
	cur := []any{doc}
	for _, tok := range loc {
		var next []any
		for _, s := range expand(cur) {
			m, _ := s.(map[string]any)
			if props, ok := m["properties"].(map[string]any); ok && props[tok] != nil {
				next = append(next, props[tok])
			} else if _, err := strconv.Atoi(tok); err == nil && m["items"] != nil {
				next = append(next, m["items"])
			} else if ap, ok := m["additionalProperties"].(map[string]any); ok {
				next = append(next, ap)
			}
		}
		cur = next
	}
	set := map[string]bool{}
	for _, s := range expand(cur) {
		m, _ := s.(map[string]any)
		props, _ := m["properties"].(map[string]any)
		for k := range props {
			set[k] = true
		}
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// expand adds the subschemas that apply alongside each schema.
func expand(list []any) []any {
	out := append([]any(nil), list...)
	for i := 0; i < len(out) && i < 64; i++ {
		m, _ := out[i].(map[string]any)
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if subs, ok := m[k].([]any); ok {
				out = append(out, subs...)
			}
		}
		for _, k := range []string{"then", "else"} {
			if sub, ok := m[k]; ok {
				out = append(out, sub)
			}
		}
	}
	return out
}

func sorted(list []string) []string {
	out := append([]string(nil), list...)
	sort.Strings(out)
	return out
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	out := list[:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
