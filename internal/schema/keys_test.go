package schema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func TestCheckKeys(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{`{}`, `{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`, `[1,{"x":[{"y":1}]}]`, `"s"`, `{"A1":1,"b":{"A1":[]}}`} {
		if err := CheckKeys(json.RawMessage(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for doc, ptr := range map[string]string{
		`{"projectId":"x","projectId":"y"}`: "/projectId",
		`{"a":{"Title":"x","title":"y"}}`:   "/a/title",
		`{"list":[{"k":1,"k":2}]}`:          "/list/k",
		`{"id\u0000":"x"}`:                  "/id\x00",
		`{"a":1,"b":[1,2],"c":{},"a":3}`:    "/a",
		`{"x":{"y":{"z":1}},"x":2}`:         "/x",
	} {
		err := CheckKeys(json.RawMessage(doc))
		e := switchboard.AsError(err)
		if e == nil || e.Code != switchboard.CodeInvalidInput || e.Details.(map[string]any)["pointer"] != ptr {
			t.Errorf("%s: %v, want INVALID_INPUT at %q", doc, err, ptr)
		}
	}
	s, _ := Compile(json.RawMessage(`{"type":"object"}`))
	if err := s.Validate(json.RawMessage(`{"approved":true,"approved":false}`)); switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), "twice") {
		t.Errorf("Validate took duplicate keys: %v", err)
	}
}

func FuzzCheckKeys(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,{"c":2}]},"d":"e"}`))
	f.Add([]byte(`{"a":1,"A":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = CheckKeys(b) // must not panic
	})
}
