package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/pflag"
)

// schemaField is one top-level input property exposed as a flag.
type schemaField struct {
	name     string // the property name in the input
	flag     string // its flag name
	required bool
	value    *fieldValue
}

// propSchema is the part of a property's JSON Schema that shapes a flag.
type propSchema struct {
	Type        any    `json:"type"`
	Description string `json:"description"`
	Enum        []any  `json:"enum"`
	Default     any    `json:"default"`
	Items       *struct {
		Type any   `json:"type"`
		Enum []any `json:"enum"`
	} `json:"items"`
}

var flagNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// schemaFlags builds a flag set for the top-level properties of an input
// schema. Nested objects and anything else flags cannot express are JSON
// valued; --input covers the rest.
func schemaFlags(cmdPath string, raw json.RawMessage) (*pflag.FlagSet, []*schemaField, error) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, nil, fmt.Errorf("tool input schema: %w", err)
		}
	}
	fs := pflag.NewFlagSet(cmdPath, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned and printed by Run
	aliases := map[string]string{}
	used := map[string]bool{}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	var fields []*schemaField
	for _, name := range names {
		var p propSchema
		_ = json.Unmarshal(s.Properties[name], &p) // a non-object property schema yields an untyped flag
		flag := kebab(name)
		if reservedFlags[flag] || reservedFlags[name] {
			flag = "arg-" + flag
		}
		if used[flag] {
			flag = name
		}
		if used[flag] || !flagNameRE.MatchString(flag) {
			continue // reachable through --input only
		}
		used[flag] = true
		if name != flag {
			aliases[name] = flag
		}
		f := &schemaField{name: name, flag: flag, required: slices.Contains(s.Required, name), value: newFieldValue(p)}
		fl := fs.VarPF(f.value, flag, "", usage(p, f.required, f.value))
		if f.value.kind == "boolean" {
			fl.NoOptDefVal = "true"
		}
		fields = append(fields, f)
	}
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, n string) pflag.NormalizedName {
		if a, ok := aliases[n]; ok {
			return pflag.NormalizedName(a)
		}
		return pflag.NormalizedName(n)
	})
	return fs, fields, nil
}

// kebab turns projectId, project_id or ProjectID into project-id.
func kebab(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '_' || r == ' ':
			b.WriteByte('-')
		case unicode.IsUpper(r):
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i > 0 && i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsLower(rs[i+1])
			if prevLower || nextLower {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func usage(p propSchema, required bool, v *fieldValue) string {
	var parts []string
	if d := strings.TrimSpace(p.Description); d != "" {
		parts = append(parts, strings.Join(strings.Fields(d), " "))
	}
	enum := p.Enum
	if v.kind == "array" && p.Items != nil {
		enum = p.Items.Enum
	}
	if len(enum) > 0 {
		parts = append(parts, "one of: "+joinAny(enum))
	}
	if v.kind == "array" {
		parts = append(parts, "repeatable or comma-separated")
	}
	if p.Default != nil {
		parts = append(parts, "tool default: "+joinAny([]any{p.Default}))
	}
	if required {
		parts = append(parts, "required")
	}
	return strings.Join(parts, "; ")
}

func joinAny(vs []any) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		if s, ok := v.(string); ok {
			out[i] = s
			continue
		}
		b, _ := json.Marshal(v)
		out[i] = string(b)
	}
	return strings.Join(out, ", ")
}

// fieldValue is a pflag.Value that keeps the JSON a flag contributes.
type fieldValue struct {
	kind, item string // item: the element kind of an array
	set        bool
	one        json.RawMessage
	many       []json.RawMessage
}

// schemaType picks the first non-null type of a "type" keyword.
func schemaType(t any) string {
	switch x := t.(type) {
	case string:
		return x
	case []any:
		var types []string
		for _, e := range x {
			if s, ok := e.(string); ok && s != "null" {
				types = append(types, s)
			}
		}
		if len(types) == 1 {
			return types[0]
		}
	}
	return ""
}

func newFieldValue(p propSchema) *fieldValue {
	v := &fieldValue{kind: schemaType(p.Type)}
	switch v.kind {
	case "string", "integer", "number", "boolean":
	case "array":
		if p.Items != nil {
			v.item = schemaType(p.Items.Type)
		}
		switch v.item {
		case "string", "integer", "number", "boolean":
		default:
			v.kind = "json" // arrays of objects travel as JSON
		}
	case "object":
		v.kind = "json"
	default:
		v.kind = "any" // untyped: JSON when it parses, else a string
	}
	return v
}

func (v *fieldValue) Type() string {
	switch v.kind {
	case "integer":
		return "int"
	case "boolean":
		return "bool"
	case "array":
		return v.item + "s"
	case "json", "any":
		return "json"
	}
	return v.kind
}

func (v *fieldValue) String() string {
	if !v.set {
		return ""
	}
	return string(v.json())
}

func (v *fieldValue) Set(s string) error {
	if v.kind == "array" {
		if strings.HasPrefix(strings.TrimSpace(s), "[") {
			var items []json.RawMessage
			if err := json.Unmarshal([]byte(s), &items); err != nil {
				return fmt.Errorf("not a JSON array: %v", err)
			}
			v.many, v.set = append(v.many, items...), true
			return nil
		}
		for _, part := range strings.Split(s, ",") {
			raw, err := scalarJSON(v.item, strings.TrimSpace(part))
			if err != nil {
				return err
			}
			v.many = append(v.many, raw)
		}
		v.set = true
		return nil
	}
	raw, err := scalarJSON(v.kind, s)
	if err != nil {
		return err
	}
	v.one, v.set = raw, true
	return nil
}

func (v *fieldValue) json() json.RawMessage {
	if v.kind == "array" {
		b, _ := json.Marshal(v.many)
		return b
	}
	return v.one
}

// scalarJSON converts flag text to the JSON of kind.
func scalarJSON(kind, s string) (json.RawMessage, error) {
	switch kind {
	case "integer":
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		return json.RawMessage(s), nil
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return json.Marshal(f)
	case "boolean":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", s)
		}
		return json.Marshal(b)
	case "json":
		if !json.Valid([]byte(s)) {
			return nil, fmt.Errorf("%q is not valid JSON", s)
		}
		return json.RawMessage(s), nil
	case "any":
		if json.Valid([]byte(s)) {
			return json.RawMessage(s), nil
		}
	}
	return json.Marshal(s)
}
