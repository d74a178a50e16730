package strictjson

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// refused is the RELIABILITY row 21 / issue 14 item 8 corpus: each
// document with the pointer it must be refused at.
var refused = map[string]string{
	`{"projectId":"x","projectId":"y"}`:        "/projectId",
	`{"a":{"Title":"x","title":"y"}}`:          "/a/title",
	`{"list":[{"k":1,"k":2}]}`:                 "/list/0/k",
	`{"id\u0000":"x"}`:                         "/id\x00",
	`{"href\u200b":"x"}`:                       "/href\u200b",
	`{"x":{"y":{"z":1}},"x":2}`:                "/x",
	`{"n":1e400}`:                              "/n",
	`{"n":-1e400}`:                             "/n",
	`{"n":9007199254740993}`:                   "/n",
	`{"n":-9007199254740992}`:                  "/n",
	`{"n":[1,123456789012345678901234567890]}`: "/n/1",
	`{"s":"\ud800"}`:                           "/s",
	`{"s":"\udc00x"}`:                          "/s",
	"{\"s\":\"\xff\"}":                         "/s",
	"{\"\xc3\":1}":                             "", // jsontext points at the object that holds the name
	`{"Kelvin":1,"kelvin":2}`:                  "/kelvin",
	`{"\u212aey":1,"key":2}`:                   "/key", // KELVIN SIGN folds with k
}

var accepted = []string{
	`{}`, `[]`, `"s"`, `0`, `null`,
	`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`,
	`{"n":9007199254740991,"m":-9007199254740991,"f":1.5e300,"u":1e-400,"z":-0}`,
	`{"s":"\ud83d\ude00 ok","e":"é"}`,
	`{"A1":1,"b":{"A1":[]}}`,
	" {\"a\" : [1, 2]} \n",
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, doc := range accepted {
		if f := Check([]byte(doc)); f != nil {
			t.Errorf("%s: refused: %v", doc, f)
		}
	}
	for doc, ptr := range refused {
		f := Check([]byte(doc))
		if f == nil || f.Pointer != ptr || f.Syntax {
			t.Errorf("%q: %+v, want a strictness fault at %q", doc, f, ptr)
		}
	}
	for _, doc := range []string{``, `{`, `{"a":}`, `{"a":1} {}`, `{"a":1}x`, `[1,]`, `{'a':1}`} {
		if f := Check([]byte(doc)); f == nil || !f.Syntax {
			t.Errorf("%q: %+v, want a syntax fault", doc, f)
		}
	}
	deep := strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001)
	if f := Check([]byte(deep)); f == nil {
		t.Errorf("depth 10,001 accepted")
	}
}

func TestInput(t *testing.T) {
	t.Parallel()
	for doc, ptr := range refused {
		err := Input([]byte(doc))
		e := switchboard.AsError(err)
		if e == nil || e.Code != switchboard.CodeSchemaViolation || e.Details.(map[string]any)["pointer"] != ptr {
			t.Errorf("%q: %v, want SCHEMA_VIOLATION at %q", doc, err, ptr)
		}
	}
	if err := Input([]byte(`{"a":`)); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Errorf("broken input: %v, want INVALID_INPUT", err)
	}
}

func TestEnvelope(t *testing.T) {
	t.Parallel()
	for doc, ptr := range refused {
		// Inside the tool input: the input's fault, relative to it.
		body := `{"sessionId":"s","input":` + doc + `}`
		e := switchboard.AsError(Envelope([]byte(body), "/input"))
		if e == nil || e.Code != switchboard.CodeSchemaViolation || e.Details.(map[string]any)["pointer"] != ptr {
			t.Errorf("%q: %v, want SCHEMA_VIOLATION at %q", body, e, ptr)
		}
		// Elsewhere: the envelope's.
		body = `{"input":{},"meta":` + doc + `}`
		e = switchboard.AsError(Envelope([]byte(body), "/input"))
		if e == nil || e.Code != switchboard.CodeInvalidInput || e.Details.(map[string]any)["pointer"] != "/meta"+ptr {
			t.Errorf("%q: %v, want INVALID_INPUT at /meta%s", body, e, ptr)
		}
	}
	e := switchboard.AsError(Envelope([]byte(`{"input":{"a":1},"input":{"a":2}}`), "/input"))
	if e == nil || e.Code != switchboard.CodeInvalidInput || e.Details.(map[string]any)["pointer"] != "/input" {
		t.Errorf("duplicate input member: %v, want INVALID_INPUT at /input", e)
	}
}

type callBody struct {
	Input     json.RawMessage `json:"input"`
	SessionID string          `json:"sessionId,omitempty"`
	Async     bool            `json:"async,omitempty"`
}

func TestDecode(t *testing.T) {
	t.Parallel()
	var b callBody
	if err := Decode([]byte(`{"input":{"a":[1,2]},"sessionId":"s1","async":true}`), &b, "/input"); err != nil {
		t.Fatal(err)
	}
	if string(b.Input) != `{"a":[1,2]}` || b.SessionID != "s1" || !b.Async {
		t.Errorf("decoded %+v", b)
	}
	for body, ptr := range map[string]string{
		`{"input":{"x":1},"INPUT":{"x":2}}`:            "/INPUT",
		`{"INPUT":{"x":2},"input":{"x":1}}`:            "/input", // the case pair, whichever comes second
		`{"input":{},"SESSIONID":"s"}`:                 "/SESSIONID",
		`{"input":{},"sessionid":"s"}`:                 "/sessionid",
		`{"input":{},"extra":1}`:                       "/extra",
		`{"input":{},"async":"yes"}`:                   "/async",
		`{"input":{},"sessionId":"s","sessionId":"t"}`: "/sessionId",
	} {
		var b callBody
		err := Decode([]byte(body), &b, "/input")
		e := switchboard.AsError(err)
		if e == nil || e.Code != switchboard.CodeInvalidInput || e.Details.(map[string]any)["pointer"] != ptr {
			t.Errorf("%s: %v, want INVALID_INPUT at %q", body, err, ptr)
		}
	}
	if err := Decode(nil, &b, ""); switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty body: %v", err)
	}
}

func seeds(f *testing.F) {
	for doc := range refused {
		f.Add([]byte(doc))
	}
	for _, doc := range accepted {
		f.Add([]byte(doc))
	}
	f.Add([]byte(`{"input":{"x":1},"INPUT":{"x":2}}`))
	f.Add([]byte(`{"input":{},"SESSIONID":"s"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b","arguments":{"k":1,"k":2}}}`))
	f.Add([]byte(strings.Repeat("[", 300)))
}

// FuzzEnvelope: no panic; whatever Decode accepts, Check accepts and
// encoding/json reads to the same members.
func FuzzEnvelope(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var got callBody
		if err := Decode(b, &got, "/input"); err != nil {
			if switchboard.AsError(err) == nil {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if f := Check(b); f != nil {
			t.Fatalf("Decode accepted what Check refuses: %v", f)
		}
		var loose callBody
		if err := json.Unmarshal(b, &loose); err != nil {
			t.Fatalf("encoding/json refuses what Decode accepted: %v", err)
		}
		if loose.SessionID != got.SessionID || loose.Async != got.Async {
			t.Fatalf("two readings: strict %+v, encoding/json %+v", got, loose)
		}
	})
}

// FuzzToolInput: no panic; an accepted input is valid JSON with no name
// repeated under case folding.
func FuzzToolInput(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Input(b)
		if err != nil {
			if c := switchboard.CodeOf(err); c != switchboard.CodeSchemaViolation && c != switchboard.CodeInvalidInput {
				t.Fatalf("code %s", c)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
	})
}
