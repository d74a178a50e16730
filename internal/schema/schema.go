// Package schema compiles and applies the JSON Schemas that tools declare.
// It wraps github.com/santhosh-tekuri/jsonschema/v6 so the rest of
// switchboard sees one small API and errors with frozen codes: a schema that
// does not compile is INVALID_INPUT, a value that fails one is
// SCHEMA_VIOLATION naming the failing field by JSON pointer.
//
// Schemas never load anything: $ref may point only inside the document, so a
// registered schema cannot make the daemon read files or fetch URLs.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/strictjson"
)

// Schema is a compiled JSON Schema.
type Schema struct {
	s   *jsonschema.Schema
	raw json.RawMessage
}

// noLoader refuses every external reference.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed; inline the definition", url)
}

const docURL = "urn:switchboard:schema"

// Compile parses and compiles raw. An empty raw compiles to the schema that
// accepts everything.
func Compile(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`true`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "schema is not valid JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(docURL, doc); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "schema does not compile: %v", err)
	}
	s, err := c.Compile(docURL)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "schema does not compile: %s", trimURL(err.Error()))
	}
	if err := checkExpansion(s); err != nil {
		return nil, err
	}
	return &Schema{s: s, raw: raw}, nil
}

// Raw returns the schema document as it was compiled.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// Violation is one failing keyword, located in the instance by JSON pointer.
type Violation struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// Validate checks the JSON document v against s. A failure is a
// SCHEMA_VIOLATION whose message names the first failing field and whose
// details list every leaf violation.
func (s *Schema) Validate(v json.RawMessage) error {
	// Strict first (internal/strictjson): one document must not mean two
	// things to the validator and to the backend.
	if err := strictjson.Input(v); err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "value is not valid JSON: %v", err)
	}
	return s.ValidateValue(inst)
}

// ValidateValue is Validate for a value already decoded with
// jsonschema.UnmarshalJSON semantics (json.Number for numbers).
func (s *Schema) ValidateValue(inst any) error {
	err := s.s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return switchboard.Errorf(switchboard.CodeSchemaViolation, "%v", err)
	}
	vs := leaves(ve)
	first := vs[0]
	where := first.Pointer
	if where == "" {
		where = "(root)"
	}
	return switchboard.Errorf(switchboard.CodeSchemaViolation, "at %s: %s", where, first.Message).
		WithDetails(map[string]any{"pointer": first.Pointer, "violations": vs})
}

// leaves flattens the error tree into its leaf causes, deepest first so the
// most specific field comes first.
func leaves(ve *jsonschema.ValidationError) []Violation {
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, Violation{Pointer: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(english)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Count(out[i].Pointer, "/") > strings.Count(out[j].Pointer, "/")
	})
	return out
}

// english renders the validator's messages ("missing property 'title'",
// "got string, want integer"); printing the kinds themselves shows Go structs.
var english = message.NewPrinter(language.English)

// pointer renders an instance location as an RFC 6901 JSON pointer.
func pointer(loc []string) string {
	var b strings.Builder
	for _, seg := range loc {
		b.WriteByte('/')
		if strings.ContainsAny(seg, "~/") {
			pointerEscaper.WriteString(&b, seg)
		} else {
			b.WriteString(seg)
		}
	}
	return b.String()
}

// pointerEscaper escapes a JSON pointer segment; built once (a Replacer
// costs microseconds to build and is safe for concurrent use).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func trimURL(s string) string { return strings.ReplaceAll(s, docURL, "schema") }
