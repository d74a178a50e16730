package strictjson

import (
	"encoding/json"
	"testing"

	"github.com/switchboardhq/switchboard"
)

type exactMsg struct {
	ID   string `json:"id"`
	Role string `json:"role"`
}

type exactDoc struct {
	ThreadID string          `json:"threadId"`
	Messages []exactMsg      `json:"messages"`
	State    json.RawMessage `json:"state"`
	Props    map[string]any  `json:"props"`
}

// Issue 14 item 8: a lone case variant of a declared member is refused
// with its pointer; unknown members and free-form values pass.
func TestCaseExact(t *testing.T) {
	for _, tc := range []struct {
		doc, pointer string
	}{
		{doc: `{"threadId":"t","messages":[{"id":"1","role":"user"}],"extra":1}`},
		{doc: `{"threadId":"t","state":{"ThreadID":1,"ID":2},"props":{"Role":3}}`},
		{doc: `{"THREADID":"t"}`, pointer: "/THREADID"},
		{doc: `{"threadId":"t","messages":[{"id":"1"},{"id":"2","ROLE":"user"}]}`, pointer: "/messages/1/ROLE"},
		{doc: `{"threadId":"t","messages":"not an array"}`}, // the decoder's to report
	} {
		err := CaseExact([]byte(tc.doc), exactDoc{})
		if tc.pointer == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.doc, err)
			}
			continue
		}
		e := switchboard.AsError(err)
		d, _ := e.Details.(map[string]any)
		if err == nil || e.Code != switchboard.CodeInvalidInput || d["pointer"] != tc.pointer {
			t.Errorf("%s: %v; want INVALID_INPUT at %s", tc.doc, err, tc.pointer)
		}
	}
}
