package openapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// converter turns OpenAPI schemas into self-contained JSON Schema
// (draft 2020-12) for tool input: every $ref inlined, a reference to a
// schema already being expanded (recursion) and anything deeper than
// maxDepth replaced by an open schema and noted, OpenAPI 3.0 keywords
// translated (nullable, boolean exclusive bounds, example), and properties
// marked readOnly left out (a caller never sends them).
type converter struct {
	maxDepth int
	spent    *expansion
	notes    *[]string
	stack    []string
	cut      map[string]bool
}

func (c *converter) note(format string, args ...any) {
	*c.notes = append(*c.notes, fmt.Sprintf(format, args...))
}

// schema converts ref. input says whether readOnly properties are dropped.
func (c *converter) schema(ref *openapi3.SchemaRef, depth int, input bool) map[string]any {
	m := map[string]any{}
	if ref == nil || ref.Value == nil || !c.spent.take() {
		return m
	}
	if ref.Ref != "" {
		if slices.Contains(c.stack, ref.Ref) {
			c.cutOnce(ref.Ref, "is recursive; the nested occurrence accepts any value")
			m["description"] = "recursive " + refName(ref.Ref) + " (not expanded)"
			return m
		}
		c.stack = append(c.stack, ref.Ref)
		defer func() { c.stack = c.stack[:len(c.stack)-1] }()
	}
	if depth > c.maxDepth {
		c.cutOnce(ref.Ref, fmt.Sprintf("nests deeper than %d levels; deeper parts accept any value", c.maxDepth))
		return m
	}
	s := ref.Value
	if s.Always != nil { // a boolean schema: {} accepts all, {"not": {}} none
		if !*s.Always {
			m["not"] = map[string]any{}
		}
		return m
	}
	types := s.Type.Slice()
	if s.Nullable && len(types) > 0 && !slices.Contains(types, "null") {
		types = append(slices.Clone(types), "null")
	}
	switch len(types) {
	case 0:
	case 1:
		m["type"] = types[0]
	default:
		m["type"] = types
	}
	put := func(k string, v any, ok bool) {
		if ok {
			m[k] = v
		}
	}
	put("title", s.Title, s.Title != "")
	put("description", s.Description, s.Description != "")
	put("format", s.Format, s.Format != "")
	put("enum", s.Enum, len(s.Enum) > 0)
	put("const", s.Const, s.Const != nil)
	put("default", s.Default, s.Default != nil)
	put("deprecated", true, s.Deprecated)
	put("pattern", s.Pattern, s.Pattern != "")
	put("minLength", s.MinLength, s.MinLength > 0)
	put("maxLength", deref(s.MaxLength), s.MaxLength != nil)
	put("minItems", s.MinItems, s.MinItems > 0)
	put("maxItems", deref(s.MaxItems), s.MaxItems != nil)
	put("uniqueItems", true, s.UniqueItems)
	put("minProperties", s.MinProps, s.MinProps > 0)
	put("maxProperties", deref(s.MaxProps), s.MaxProps != nil)
	put("multipleOf", deref(s.MultipleOf), s.MultipleOf != nil)
	c.bounds(m, s)
	switch {
	case len(s.Examples) > 0:
		m["examples"] = s.Examples
	case s.Example != nil:
		m["examples"] = []any{s.Example}
	}
	if !input {
		put("readOnly", true, s.ReadOnly)
	}
	put("writeOnly", true, s.WriteOnly && input)

	if len(s.Properties) > 0 {
		props := map[string]any{}
		for _, name := range sortedKeys(s.Properties) {
			p := s.Properties[name]
			if input && p != nil && p.Value != nil && p.Value.ReadOnly {
				continue
			}
			props[name] = c.schema(p, depth+1, input)
		}
		m["properties"] = props
	}
	if req := c.required(s, input); len(req) > 0 {
		m["required"] = req
	}
	if ap := s.AdditionalProperties; ap.Has != nil {
		m["additionalProperties"] = *ap.Has
	} else if ap.Schema != nil {
		m["additionalProperties"] = c.schema(ap.Schema, depth+1, input)
	}
	if s.Items != nil {
		m["items"] = c.schema(s.Items, depth+1, input)
	}
	for k, list := range map[string]openapi3.SchemaRefs{"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf, "prefixItems": s.PrefixItems} {
		if len(list) == 0 {
			continue
		}
		out := make([]any, len(list))
		for i, r := range list {
			out[i] = c.schema(r, depth+1, input)
		}
		m[k] = out
	}
	for k, r := range map[string]*openapi3.SchemaRef{"not": s.Not, "contains": s.Contains, "propertyNames": s.PropertyNames, "if": s.If, "then": s.Then, "else": s.Else} {
		if r != nil {
			m[k] = c.schema(r, depth+1, input)
		}
	}
	for k, ss := range map[string]openapi3.Schemas{"patternProperties": s.PatternProperties, "dependentSchemas": s.DependentSchemas} {
		if len(ss) == 0 {
			continue
		}
		out := map[string]any{}
		for name, r := range ss {
			out[name] = c.schema(r, depth+1, input)
		}
		m[k] = out
	}
	if len(s.DependentRequired) > 0 {
		m["dependentRequired"] = s.DependentRequired
	}
	return m
}

// bounds translates minimum/maximum with OpenAPI 3.0 boolean or 3.1 numeric
// exclusive bounds into JSON Schema 2020-12.
func (c *converter) bounds(m map[string]any, s *openapi3.Schema) {
	if s.Min != nil {
		if s.ExclusiveMin.IsTrue() {
			m["exclusiveMinimum"] = *s.Min
		} else {
			m["minimum"] = *s.Min
		}
	}
	if s.Max != nil {
		if s.ExclusiveMax.IsTrue() {
			m["exclusiveMaximum"] = *s.Max
		} else {
			m["maximum"] = *s.Max
		}
	}
	if s.ExclusiveMin.Value != nil {
		m["exclusiveMinimum"] = *s.ExclusiveMin.Value
	}
	if s.ExclusiveMax.Value != nil {
		m["exclusiveMaximum"] = *s.ExclusiveMax.Value
	}
}

// required lists required properties, leaving out readOnly ones for input.
func (c *converter) required(s *openapi3.Schema, input bool) []string {
	var out []string
	for _, r := range s.Required {
		if p := s.Properties[r]; input && p != nil && p.Value != nil && p.Value.ReadOnly {
			continue
		}
		out = append(out, r)
	}
	return out
}

func (c *converter) cutOnce(ref, why string) {
	if c.cut == nil {
		c.cut = map[string]bool{}
	}
	key := ref + why
	if c.cut[key] {
		return
	}
	c.cut[key] = true
	what := "a schema"
	if ref != "" {
		what = "schema " + refName(ref)
	}
	c.note("%s %s", what, why)
}

// bodyObject is a request body flattened to top-level properties.
type bodyObject struct {
	props      map[string]any
	required   []string
	additional bool // whether the body allows properties it does not declare
}

// object flattens a JSON request body schema: an object, or an allOf of
// objects. Anything else (an array, a scalar, a top-level oneOf/anyOf) is
// an error saying what it is.
func (c *converter) object(ref *openapi3.SchemaRef) (bodyObject, error) {
	out := bodyObject{props: map[string]any{}}
	if ref == nil || ref.Value == nil {
		out.additional = true // an unspecified body accepts anything
		return out, nil
	}
	if err := c.flatten(ref, &out, 0); err != nil {
		return out, err
	}
	return out, nil
}

func (c *converter) flatten(ref *openapi3.SchemaRef, out *bodyObject, depth int) error {
	s := ref.Value
	if !c.spent.take() {
		return c.spent.err
	}
	if depth > c.maxDepth {
		return fmt.Errorf("nests allOf deeper than %d levels", c.maxDepth)
	}
	switch {
	case len(s.OneOf) > 0 || len(s.AnyOf) > 0:
		return fmt.Errorf("is a oneOf/anyOf of several shapes")
	case s.Type != nil && !s.Type.Is(openapi3.TypeObject) && !s.Type.Includes(openapi3.TypeObject):
		return fmt.Errorf("is %s, not an object", strings.Join(s.Type.Slice(), " or "))
	}
	if ref.Ref != "" {
		c.stack = append(c.stack, ref.Ref)
		defer func() { c.stack = c.stack[:len(c.stack)-1] }()
	}
	for _, part := range s.AllOf {
		if part == nil || part.Value == nil {
			continue
		}
		if err := c.flatten(part, out, depth+1); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.Properties) {
		p := s.Properties[name]
		if p != nil && p.Value != nil && p.Value.ReadOnly {
			continue
		}
		out.props[name] = c.schema(p, depth+1, true)
	}
	out.required = append(out.required, c.required(s, true)...)
	if ap := s.AdditionalProperties; (ap.Has != nil && *ap.Has) || ap.Schema != nil {
		out.additional = true
	}
	return nil
}

func refName(ref string) string {
	if i := strings.LastIndexByte(ref, '/'); i >= 0 {
		return ref[i+1:]
	}
	return ref
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
