package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func TestCompileRejects(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]string{
		"not json":     `{"type":`,
		"bad type":     `{"type": "objekt"}`,
		"external ref": `{"$ref": "file:///etc/passwd"}`,
		"http ref":     `{"$ref": "http://127.0.0.1:1/s.json"}`,
		"bad regex":    `{"type": "string", "pattern": "("}`,
	} {
		if _, err := Compile(json.RawMessage(raw)); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Errorf("%s: got %v, want INVALID_INPUT", name, err)
		}
	}
}

func TestValidatePointsAtField(t *testing.T) {
	t.Parallel()
	s, err := Compile(json.RawMessage(`{"type":"object","properties":{
		"project":{"type":"object","properties":{"id":{"type":"integer"}}},
		"title":{"type":"string","minLength":1}},"required":["title"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(json.RawMessage(`{"title":"x","project":{"id":3}}`)); err != nil {
		t.Fatalf("valid input rejected: %v", err)
	}
	err = s.Validate(json.RawMessage(`{"title":"x","project":{"id":"three"}}`))
	var e *switchboard.Error
	if !errors.As(err, &e) || e.Code != switchboard.CodeSchemaViolation {
		t.Fatalf("got %v, want SCHEMA_VIOLATION", err)
	}
	if got := e.Details.(map[string]any)["pointer"]; got != "/project/id" {
		t.Errorf("pointer = %v, want /project/id", got)
	}
	if !strings.Contains(e.Message, "want integer") || strings.Contains(e.Message, "&{") {
		t.Errorf("message %q is not for people", e.Message)
	}
	err = s.Validate(json.RawMessage(`{}`))
	if switchboard.CodeOf(err) != switchboard.CodeSchemaViolation || !strings.Contains(err.Error(), "title") {
		t.Errorf("missing required: got %v", err)
	}
	if err := s.Validate(json.RawMessage(`{`)); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Errorf("bad json: got %v", err)
	}
}

func TestPointerEscapes(t *testing.T) {
	t.Parallel()
	if got := pointer([]string{"a/b", "c~d", "0"}); got != "/a~1b/c~0d/0" {
		t.Errorf("pointer = %q", got)
	}
}

// Issue 14 item 8: input that is not strict JSON fails validation with the
// pointer of the offending member, whatever the schema (here: anything).
func TestValidateStrict(t *testing.T) {
	t.Parallel()
	s, _ := Compile(json.RawMessage(`{"type":"object"}`))
	for in, ptr := range map[string]string{
		`{"approved":true,"approved":false}`: "/approved",
		`{"a":{"Title":"x","title":"y"}}`:    "/a/title",
		`{"n":1e400}`:                        "/n",
		`{"n":9007199254740993}`:             "/n",
		`{"s":"\ud800"}`:                     "/s",
		"{\"s\":\"\xff\"}":                   "/s",
	} {
		e := switchboard.AsError(s.Validate(json.RawMessage(in)))
		if e == nil || e.Code != switchboard.CodeSchemaViolation || e.Details.(map[string]any)["pointer"] != ptr {
			t.Errorf("%q: %v, want SCHEMA_VIOLATION at %s", in, e, ptr)
		}
	}
}

// bomb is a schema whose every level's allOf has four branches that all
// $ref the level below: small as text, exponential to validate.
func bomb(levels int) json.RawMessage {
	defs := map[string]any{"l0": map[string]any{"type": "object"}}
	for i := 1; i <= levels; i++ {
		ref := map[string]any{"$ref": fmt.Sprintf("#/$defs/l%d", i-1)}
		defs[fmt.Sprintf("l%d", i)] = map[string]any{"allOf": []any{ref, ref, ref, ref}}
	}
	b, _ := json.Marshal(map[string]any{"$defs": defs, "$ref": fmt.Sprintf("#/$defs/l%d", levels)})
	return b
}

// A schema that would make every validation walk millions of subschemas
// is refused when it is compiled (a tab's tool, a registration, an
// import), not discovered one slow call at a time; a shallower one of the
// same shape, and a recursive one, compile.
func TestExpansionBudget(t *testing.T) {
	raw := bomb(10)
	if len(raw) > 2048 {
		t.Fatalf("the bomb is %d bytes; it should be small", len(raw))
	}
	_, err := Compile(raw)
	if switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), "expands to over") {
		t.Fatalf("10 levels of 4-way allOf: %v, want INVALID_INPUT naming the expansion", err)
	}
	s, err := Compile(bomb(6)) // 4⁶ = 4,096 visits: fine
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	tree := `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`
	if _, err := Compile(json.RawMessage(tree)); err != nil {
		t.Fatalf("a recursive schema: %v", err)
	}
}

func FuzzCompile(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`))
	f.Add([]byte(bomb(3)))
	f.Add([]byte(`{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"},{"$ref":"#"}]}},"$ref":"#/$defs/a"}`))
	f.Add([]byte(`{"items":[{"$ref":"#"}],"additionalItems":{"anyOf":[{"$ref":"#"},true]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 4096 {
			return
		}
		s, err := Compile(raw)
		if err != nil {
			if switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
				t.Fatalf("refusal %v is not INVALID_INPUT", err)
			}
			return
		}
		if n := expansion(s.s, MaxExpansion); n > MaxExpansion {
			t.Fatalf("compiled a schema that expands to %d", n)
		}
	})
}
