// Package strictjson is the one strict reader of JSON that arrives from
// outside: request envelopes (HTTP bodies, MCP messages) and tool inputs.
//
// encoding/json matches member names case-insensitively, keeps the last of
// duplicate names, replaces invalid UTF-8 and lone surrogates with U+FFFD
// and accepts numbers no reader can hold. Each of those lets one document
// mean two things to two readers — the daemon that validated it and the
// backend, approval card or browser that acts on it — which is how
// {"input": {benign}, "INPUT": {evil}} ran the evil input. This package
// refuses, each with the JSON pointer of the offending member:
//
//   - a name that appears twice in one object, also when the two differ
//     only by letter case (Unicode simple folding): a backend that matches
//     case-insensitively would read the other one;
//   - a name holding a control or invisible format character (NUL, U+200B):
//     "id\u0000" must not pass for "id";
//   - invalid UTF-8 and escaped lone surrogates (`\ud800`);
//   - a number that overflows an IEEE 754 double (1e400), and an integer
//     written without fraction or exponent beyond ±(2^53−1), the range
//     RFC 7493 (I-JSON) gives for exact integers: a JavaScript or double-
//     based backend would silently read 9007199254740993 as …992. Numbers
//     with a fraction or an exponent are taken as doubles, as JSON Schema
//     and such backends take them;
//   - anything after the one top-level value.
//
// Syntax, UTF-8 and duplicate names are checked by jsontext from
// github.com/go-json-experiment/json (the prototype of encoding/json/v2);
// the walk here adds case folding, key characters and number range.
// Decode then decodes an envelope with exact-case names and unknown members
// refused.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/switchboardhq/switchboard"
)

// MaxSafeInt is 2^53−1, the largest integer every JSON reader holds exactly.
const MaxSafeInt = 1<<53 - 1

// Fault is the first way a document is not strict JSON.
type Fault struct {
	// Pointer is the RFC 6901 pointer of the offending member or value.
	Pointer string
	// Reason says what is wrong, for a person.
	Reason string
	// Syntax is set when the document is not JSON at all (as opposed to
	// JSON that is ambiguous).
	Syntax bool
	// name is set when the fault is in a member's name (a duplicate),
	// not in its value.
	name bool
}

func (f *Fault) Error() string { return "at " + where(f.Pointer) + ": " + f.Reason }

func where(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// Check reports the first way raw is not exactly one strict JSON value, or
// nil.
func Check(raw []byte) *Fault {
	d := jsontext.NewDecoder(bytes.NewReader(raw))
	// folded holds, per open object, its names by folded form.
	var folded []map[string]string
	for {
		switch k := d.PeekKind(); k {
		case '{', '[':
			if _, err := d.ReadToken(); err != nil {
				return fault(raw, d, err)
			}
			if k == '{' {
				folded = append(folded, nil)
			}
			continue
		case '}', ']':
			if _, err := d.ReadToken(); err != nil {
				return fault(raw, d, err)
			}
			if k == '}' {
				folded = folded[:len(folded)-1]
			}
		default:
			v, err := d.ReadValue()
			if err != nil {
				return fault(raw, d, err)
			}
			kind, n := d.StackIndex(d.StackDepth())
			if kind == '{' && n%2 == 1 { // an object member's name
				name, err := jsontext.AppendUnquote(nil, v)
				if err != nil {
					return fault(raw, d, err)
				}
				top := &folded[len(folded)-1]
				if f := checkName(string(name), top); f != "" {
					return &Fault{Pointer: string(d.StackPointer()), Reason: f, name: true}
				}
				continue
			}
			if v.Kind() == '0' {
				if f := checkNumber(string(v)); f != "" {
					return &Fault{Pointer: string(d.StackPointer()), Reason: f}
				}
			}
		}
		if d.StackDepth() == 0 {
			if rest := bytes.TrimLeft(raw[d.InputOffset():], " \t\r\n"); len(rest) > 0 {
				return &Fault{Reason: "data after the top-level JSON value; send one value", Syntax: true}
			}
			return nil
		}
	}
}

// Invisible returns the first control or format character of s (NUL, a
// newline, U+202E RIGHT-TO-LEFT OVERRIDE, ...): the rule for names people
// read — member names here, labels elsewhere — since such a character can
// hide or reorder what the reader sees.
func Invisible(s string) (rune, bool) {
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return r, true
		}
	}
	return 0, false
}

// checkName refuses a name that repeats another of its object's in another
// letter case, or that holds a control or format character. Exact
// duplicates are jsontext's to find (its error names the pointer).
func checkName(name string, names *map[string]string) string {
	if r, bad := Invisible(name); bad {
		return fmt.Sprintf("the key %q contains the control or format character %U; send keys of visible characters", name, r)
	}
	if *names == nil {
		*names = map[string]string{}
	}
	key := fold(name)
	if prev, dup := (*names)[key]; dup && prev != name {
		return fmt.Sprintf("the keys %q and %q differ only by letter case; send one of them", prev, name)
	}
	(*names)[key] = name
	return ""
}

// fold maps each rune to the smallest rune of its simple case-folding
// orbit, so names equal under strings.EqualFold fold alike.
func fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii { // the smallest rune of an ASCII letter's orbit is its upper case (k, K, U+212A)
		return strings.ToUpper(s)
	}
	var b strings.Builder
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// checkNumber refuses numbers outside what every reader holds (see the
// package doc).
func checkNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		n, err := strconv.ParseInt(lit, 10, 64)
		if err != nil || n > MaxSafeInt || n < -MaxSafeInt {
			return fmt.Sprintf("the integer %s is beyond ±(2^53−1) and would lose precision in most readers; send it as a string", short(lit))
		}
		return ""
	}
	if _, err := strconv.ParseFloat(lit, 64); err != nil && errors.Is(err, strconv.ErrRange) {
		if f, _ := strconv.ParseFloat(lit, 64); f != 0 { // overflow, not underflow to 0
			return fmt.Sprintf("the number %s overflows a 64-bit float; send it as a string", short(lit))
		}
	}
	return ""
}

func short(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// fault turns a jsontext error into a Fault.
func fault(raw []byte, d *jsontext.Decoder, err error) *Fault {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		// io.EOF and io.ErrUnexpectedEOF: the document ends early.
		return &Fault{Pointer: string(d.StackPointer()), Reason: "the JSON document ends early", Syntax: true}
	}
	f := &Fault{Pointer: string(se.JSONPointer)}
	msg := se.Err.Error()
	switch {
	case se.Err == jsontext.ErrDuplicateName:
		f.Reason, f.name = "the key appears twice in one object; send each key once", true
	case strings.Contains(msg, "invalid UTF-8"):
		f.Reason = "a string is not valid UTF-8"
	case strings.Contains(msg, "surrogate"):
		f.Reason = `a string holds a lone UTF-16 surrogate escape (such as \ud800), which denotes no character`
	default:
		f.Reason = fmt.Sprintf("not valid JSON at byte %d: %s", se.ByteOffset, msg)
		f.Syntax = true
	}
	if !f.Syntax && !permissive(raw) {
		f.Syntax = true // the document is broken beyond the first strictness fault
	}
	return f
}

// permissive reports whether raw is one JSON value when duplicates and
// invalid UTF-8 are allowed: the line between broken and ambiguous JSON.
func permissive(raw []byte) bool {
	return jsontext.Value(raw).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

// Input checks a tool input. A fault is SCHEMA_VIOLATION (input that is
// not strict JSON breaks every schema, as docs/api-tools.md says of input
// validation) whose details carry the pointer within the input.
func Input(raw []byte) error {
	f := Check(raw)
	if f == nil {
		return nil
	}
	code := switchboard.CodeSchemaViolation
	if f.Syntax {
		code = switchboard.CodeInvalidInput
	}
	return switchboard.Errorf(code, "%s", f.Error()).WithDetails(map[string]any{"pointer": f.Pointer})
}

// Envelope checks a request document. inputAt, when not empty, is the
// pointer of the member that holds a tool input (/input of a call body,
// /params/arguments of an MCP tools/call): a fault inside it is the
// input's, reported as Input reports it, relative to the input, so a
// duplicate key in a tool's input is refused alike on every transport.
// Any other fault is INVALID_INPUT.
func Envelope(raw []byte, inputAt string) error {
	f := Check(raw)
	if f == nil {
		return nil
	}
	inInput := strings.HasPrefix(f.Pointer, inputAt+"/") || (f.Pointer == inputAt && !f.name)
	if inputAt != "" && !f.Syntax && inInput {
		rel := strings.TrimPrefix(f.Pointer, inputAt)
		return switchboard.Errorf(switchboard.CodeSchemaViolation, "input: at %s: %s", where(rel), f.Reason).
			WithDetails(map[string]any{"pointer": rel})
	}
	return switchboard.Errorf(switchboard.CodeInvalidInput, "request body %s", f.Error()).
		WithDetails(map[string]any{"pointer": f.Pointer})
}

// Decode checks raw with Envelope and decodes it into v with exact-case
// member names; a member v does not declare is INVALID_INPUT naming it
// (details: pointer, field).
func Decode(raw []byte, v any, inputAt string) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "request body is empty; send a JSON document")
	}
	if err := Envelope(raw, inputAt); err != nil {
		return err
	}
	err := json.Unmarshal(raw, v, json.RejectUnknownMembers(true))
	if err == nil {
		return nil
	}
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "request body: %v", err)
	}
	ptr := string(se.JSONPointer)
	if errors.Is(se.Err, json.ErrUnknownName) {
		field := ptr[strings.LastIndexByte(ptr, '/')+1:]
		field = pointerUnescaper.Replace(field)
		return switchboard.Errorf(switchboard.CodeInvalidInput,
			"request body has an unknown field %q at %s; names are case-sensitive, check its spelling", field, where(ptr)).
			WithDetails(map[string]any{"pointer": ptr, "field": field})
	}
	want := "another type"
	if se.GoType != nil {
		want = goTypeName(se.GoType)
	}
	got := "value"
	if se.JSONKind != 0 {
		got = se.JSONKind.String()
	}
	return switchboard.Errorf(switchboard.CodeInvalidInput, "at %s: must be %s, not JSON %s", where(ptr), want, got).
		WithDetails(map[string]any{"pointer": ptr})
}

var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// goTypeName renders a Go type as a JSON reader would name it.
func goTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}
