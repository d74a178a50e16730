package schema

import (
	"encoding/json"
	"errors"
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
