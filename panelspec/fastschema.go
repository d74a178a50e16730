package panelspec

import (
	"math"
	"regexp"
	"unicode/utf8"
)

// fastSchema answers one question, "is this value valid?", for the subset
// of JSON Schema 2020-12 that the built-in catalog uses. The compiled
// jsonschema/v6 schema stays the source of truth: it runs whenever the fast
// check says "invalid" (to produce the precise errors), and whenever a
// schema uses a keyword outside the subset (then there is no fast check at
// all). The fast check exists because the common case, a valid node, is
// about ten times cheaper this way, which is what lets Validate meet its
// throughput budget; FuzzFastSchema asserts that both always agree.
type fastSchema struct {
	bool     *bool
	types    uint8
	props    []namedSchema // properties, searched linearly: there are few
	required []string
	addl     *fastSchema
	items    *fastSchema
	enum     []any
	hasConst bool
	constV   any
	minLen   int
	maxLen   int
	minItems int
	maxItems int
	minProps int
	maxProps int
	minimum  *float64
	maximum  *float64
	exMin    *float64
	exMax    *float64
	pattern  *regexp.Regexp
	allOf    []*fastSchema
	anyOf    []*fastSchema
	oneOf    []*fastSchema
	not      *fastSchema
	ifS      *fastSchema
	thenS    *fastSchema
	elseS    *fastSchema
}

const (
	tNull uint8 = 1 << iota
	tBool
	tObject
	tArray
	tNumber
	tInteger
	tString
)

var typeBits = map[string]uint8{
	"null": tNull, "boolean": tBool, "object": tObject, "array": tArray,
	"number": tNumber, "integer": tInteger, "string": tString,
}

// Keywords that only annotate, or that both validators ignore.
var fastIgnored = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"format": true, // an annotation in 2020-12 unless format assertion is on
	"$id":    true,
}

// compileFast compiles doc, or returns nil when doc uses a keyword outside
// the subset (any unrecognised keyword that is not an x- annotation).
func compileFast(doc any) *fastSchema {
	switch d := doc.(type) {
	case bool:
		return &fastSchema{bool: &d}
	case map[string]any:
		s := &fastSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}
		for k, v := range d {
			if !s.keyword(k, v) {
				return nil
			}
		}
		return s
	}
	return nil
}

func (s *fastSchema) keyword(k string, v any) bool {
	if fastIgnored[k] || (len(k) > 2 && k[:2] == "x-") {
		return true
	}
	var ok bool
	switch k {
	case "$schema":
		return v == "https://json-schema.org/draft/2020-12/schema"
	case "type":
		switch t := v.(type) {
		case string:
			s.types, ok = typeBits[t]
			return ok
		case []any:
			for _, x := range t {
				name, _ := x.(string)
				b, found := typeBits[name]
				if !found {
					return false
				}
				s.types |= b
			}
			return len(t) > 0
		}
		return false
	case "properties":
		m, isMap := v.(map[string]any)
		if !isMap {
			return false
		}
		for name, sub := range m {
			c := compileFast(sub)
			if c == nil {
				return false
			}
			s.props = append(s.props, namedSchema{name, c})
		}
		return true
	case "required":
		a, isArr := v.([]any)
		if !isArr {
			return false
		}
		for _, x := range a {
			name, isStr := x.(string)
			if !isStr {
				return false
			}
			s.required = append(s.required, name)
		}
		return true
	case "additionalProperties":
		s.addl = compileFast(v)
		return s.addl != nil
	case "items":
		s.items = compileFast(v)
		return s.items != nil
	case "not":
		s.not = compileFast(v)
		return s.not != nil
	case "if":
		s.ifS = compileFast(v)
		return s.ifS != nil
	case "then":
		s.thenS = compileFast(v)
		return s.thenS != nil
	case "else":
		s.elseS = compileFast(v)
		return s.elseS != nil
	case "allOf", "anyOf", "oneOf":
		a, isArr := v.([]any)
		if !isArr || len(a) == 0 {
			return false
		}
		list := make([]*fastSchema, len(a))
		for i, x := range a {
			if list[i] = compileFast(x); list[i] == nil {
				return false
			}
		}
		switch k {
		case "allOf":
			s.allOf = list
		case "anyOf":
			s.anyOf = list
		default:
			s.oneOf = list
		}
		return true
	case "enum":
		a, isArr := v.([]any)
		if !isArr {
			return false
		}
		for _, x := range a {
			if !isScalar(x) {
				return false
			}
		}
		s.enum = a
		return true
	case "const":
		s.hasConst, s.constV = true, v
		return isScalar(v)
	case "minLength":
		s.minLen, ok = count(v)
	case "maxLength":
		s.maxLen, ok = count(v)
	case "minItems":
		s.minItems, ok = count(v)
	case "maxItems":
		s.maxItems, ok = count(v)
	case "minProperties":
		s.minProps, ok = count(v)
	case "maxProperties":
		s.maxProps, ok = count(v)
	case "minimum":
		s.minimum, ok = num(v)
	case "maximum":
		s.maximum, ok = num(v)
	case "exclusiveMinimum":
		s.exMin, ok = num(v)
	case "exclusiveMaximum":
		s.exMax, ok = num(v)
	case "pattern":
		// jsonschema/v6 compiles patterns with Go's regexp by default, so
		// the semantics are identical.
		src, isStr := v.(string)
		if !isStr {
			return false
		}
		re, err := regexp.Compile(src)
		s.pattern, ok = re, err == nil
	}
	return ok
}

func isScalar(v any) bool {
	switch v.(type) {
	case nil, bool, float64, string:
		return true
	}
	return false
}

func count(v any) (int, bool) {
	f, isNum := v.(float64)
	if !isNum || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

func num(v any) (*float64, bool) {
	f, isNum := v.(float64)
	return &f, isNum
}

// valid reports whether v satisfies s.
func (s *fastSchema) valid(x val) bool {
	if s.bool != nil {
		return *s.bool
	}
	v := x.v
	if s.types != 0 && !s.typeOK(v) {
		return false
	}
	if s.enum != nil {
		found := false
		for _, e := range s.enum {
			if scalarEqual(x, e) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if s.hasConst && !scalarEqual(x, s.constV) {
		return false
	}
	switch v.kind {
	case kStr:
		if s.minLen >= 0 || s.maxLen >= 0 || s.pattern != nil {
			str := x.str()
			if s.minLen >= 0 || s.maxLen >= 0 {
				n := utf8.RuneCountInString(str)
				if (s.minLen >= 0 && n < s.minLen) || (s.maxLen >= 0 && n > s.maxLen) {
					return false
				}
			}
			if s.pattern != nil && !s.pattern.MatchString(str) {
				return false
			}
		}
	case kNum:
		n := v.n
		if (s.minimum != nil && n < *s.minimum) || (s.maximum != nil && n > *s.maximum) ||
			(s.exMin != nil && n <= *s.exMin) || (s.exMax != nil && n >= *s.exMax) {
			return false
		}
	case kArr:
		if (s.minItems >= 0 && x.len() < s.minItems) || (s.maxItems >= 0 && x.len() > s.maxItems) {
			return false
		}
		if s.items != nil {
			kids := x.kids()
			for i := range kids {
				if !s.items.valid(x.with(&kids[i])) {
					return false
				}
			}
		}
	case kObj:
		if (s.minProps >= 0 && x.len() < s.minProps) || (s.maxProps >= 0 && x.len() > s.maxProps) {
			return false
		}
		for _, r := range s.required {
			if !x.get(r).ok() {
				return false
			}
		}
		kids := x.kids()
		for i := range kids {
			m := x.with(&kids[i])
			if ps := s.prop(m.key()); ps != nil {
				if !ps.valid(m) {
					return false
				}
			} else if s.addl != nil && !s.addl.valid(m) {
				return false
			}
		}
	}
	for _, sub := range s.allOf {
		if !sub.valid(x) {
			return false
		}
	}
	if s.anyOf != nil {
		ok := false
		for _, sub := range s.anyOf {
			if sub.valid(x) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if s.oneOf != nil {
		n := 0
		for _, sub := range s.oneOf {
			if sub.valid(x) {
				n++
			}
		}
		if n != 1 {
			return false
		}
	}
	if s.not != nil && s.not.valid(x) {
		return false
	}
	if s.ifS != nil {
		if s.ifS.valid(x) {
			if s.thenS != nil && !s.thenS.valid(x) {
				return false
			}
		} else if s.elseS != nil && !s.elseS.valid(x) {
			return false
		}
	}
	return true
}

type namedSchema struct {
	name   string
	schema *fastSchema
}

func (s *fastSchema) prop(name string) *fastSchema {
	for i := range s.props {
		if s.props[i].name == name {
			return s.props[i].schema
		}
	}
	return nil
}

// scalarEqual reports whether x equals the schema scalar e (nil, bool,
// float64 or string), without boxing x.
func scalarEqual(x val, e any) bool {
	switch e := e.(type) {
	case string:
		return x.v.kind == kStr && x.str() == e
	case float64:
		return x.v.kind == kNum && x.v.n == e
	case bool:
		return x.v.kind == kBool && x.v.b == e
	case nil:
		return x.v.kind == kNull
	}
	return false
}

func (s *fastSchema) typeOK(v *value) bool {
	switch v.kind {
	case kNull:
		return s.types&tNull != 0
	case kBool:
		return s.types&tBool != 0
	case kStr:
		return s.types&tString != 0
	case kObj:
		return s.types&tObject != 0
	case kArr:
		return s.types&tArray != 0
	}
	return s.types&tNumber != 0 || (s.types&tInteger != 0 && v.n == math.Trunc(v.n))
}
