package panelspec

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	"github.com/switchboardhq/switchboard"
)

// A field-form bound to a source may leave out its fields: the seed writes
// {"type": "field-form", "props": {"bind": "seo"}} and lets the fields come
// from the source. They come from the source's record schema (the source's
// own "schema", else, for a seed-form source, Options.SourceSchema), and
// Validate writes them into the validated node, so the renderer, panel.list
// and panel.fill all see one list of fields, derived in one place.

// fieldPath is the field-form schema's path pattern, for one property name.
var fieldPath = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// maxFormFields is the field-form schema's maxItems for fields.
const maxFormFields = 50

// recordSchema is the part of a JSON Schema a form is derived from.
type recordSchema struct {
	Properties map[string]struct {
		Type        any      `json:"type"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		Format      string   `json:"format"`
		Enum        []any    `json:"enum"`
		ReadOnly    bool     `json:"readOnly"`
		MinLength   *int     `json:"minLength"`
		MaxLength   *int     `json:"maxLength"`
		Minimum     *float64 `json:"minimum"`
		Maximum     *float64 `json:"maximum"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// fieldsFromSchema derives a form's fields from a record schema: one field
// per top-level property, in name order, the kind from the property's
// type (string → text, or date with format date, or select with an enum;
// number and integer → number; boolean → checkbox), the label from its
// title, else its name. Properties a form cannot edit (objects, arrays,
// names that are not field paths) are left out; a schema that leaves no
// field, or more than a form holds, is an error.
func fieldsFromSchema(schema json.RawMessage) ([]FormField, error) {
	var rs recordSchema
	if err := json.Unmarshal(schema, &rs); err != nil {
		return nil, fmt.Errorf("the record schema is not a JSON Schema object: %v", err)
	}
	names := make([]string, 0, len(rs.Properties))
	for n := range rs.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []FormField
	for _, n := range names {
		p := rs.Properties[n]
		typ, _ := p.Type.(string)
		if list, ok := p.Type.([]any); ok { // ["string", "null"]: the non-null type
			for _, t := range list {
				if s, _ := t.(string); s != "null" && typ == "" {
					typ = s
				}
			}
		}
		f := FormField{Path: n, Label: truncate(p.Title, 197), Help: truncate(p.Description, 497), ReadOnly: p.ReadOnly, Required: contains(rs.Required, n)}
		if f.Label == "" {
			f.Label = n
		}
		switch {
		case !fieldPath.MatchString(n) || len(n) > 200:
			continue
		case len(p.Enum) > 0:
			f.Kind = "select"
			for _, v := range p.Enum {
				switch v.(type) {
				case string, float64, bool:
					f.Options = append(f.Options, Option{Value: v, Label: truncate(fmt.Sprint(v), 197)})
				}
			}
			if len(f.Options) == 0 || len(f.Options) > 200 {
				continue
			}
		case typ == "string" && p.Format == "date":
			f.Kind = "date"
		case typ == "string":
			f.Kind = "text"
			if p.MinLength != nil && *p.MinLength >= 0 && *p.MinLength <= 100000 {
				f.MinLength = p.MinLength
			}
			if p.MaxLength != nil && *p.MaxLength >= 1 && *p.MaxLength <= 100000 {
				f.MaxLength = p.MaxLength
			}
		case typ == "number" || typ == "integer":
			f.Kind = "number"
			f.Min, f.Max = p.Minimum, p.Maximum
			if typ == "integer" {
				one := 1.0
				f.Step = &one
			}
		case typ == "boolean":
			f.Kind = "checkbox"
		default:
			continue
		}
		out = append(out, f)
	}
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("the record schema has no property a form can edit (string, number, integer, boolean or enum)")
	case len(out) > maxFormFields:
		return nil, fmt.Errorf("the record schema gives %d fields; a form holds at most %d", len(out), maxFormFields)
	}
	return out, nil
}

// formFromSource fills the fields of the field-form id, which has none,
// from the record schema of the source it binds.
func (r *run) formFromSource(id string, props val) {
	bind, ok := props.strProp("bind")
	if !ok {
		return // the schema check reported it
	}
	src, declared := r.spec.Sources[bind]
	if !declared {
		return // the resolve stage reports it
	}
	schema, from := src.Schema, ptr("sources", bind, "schema")
	if len(schema) == 0 && src.Ref != "" && r.opts.SourceSchema != nil {
		schema, from = r.opts.SourceSchema(src.Ref), fmt.Sprintf("the record schema of %s", quote(src.Ref))
	}
	at := nodePtr(id, "props")
	if len(schema) == 0 {
		r.add(switchboard.CodeSpecProps, id, at, fmt.Sprintf("the form has no fields and its source %s has no record schema", quote(bind)),
			fmt.Sprintf(`give "fields", or declare the record's JSON Schema under /sources/%s/schema`, bind))
		return
	}
	fields, err := fieldsFromSchema(schema)
	if err != nil {
		r.add(switchboard.CodeSpecProps, id, at, fmt.Sprintf("the form takes its fields from %s, but %v", from, err), `give "fields"`)
		return
	}
	for _, f := range fields {
		unsafe := hasActiveTag(f.Label) || hasActiveTag(f.Help)
		for _, o := range f.Options {
			unsafe = unsafe || hasActiveTag(o.Label)
		}
		if unsafe {
			r.add(switchboard.CodeSpecUnsafe, id, at, fmt.Sprintf("field %s from %s carries markup tags", quote(f.Path), from), "write plain text in the schema's titles and descriptions")
			return
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.spec.Nodes[id].Props, &m); err != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	m["fields"], _ = json.Marshal(fields)
	n := r.spec.Nodes[id]
	n.Props, _ = json.Marshal(m)
	r.spec.Nodes[id] = n
}
