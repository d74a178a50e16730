package agui_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/agui/aguitest"
)

// TestEventsMatchZodSchemas validates every event of the sample run with
// @ag-ui/core's own EventSchema.
func TestEventsMatchZodSchemas(t *testing.T) {
	aguitest.Require(t)
	evs := append(sampleRun(),
		&agui.RunError{Message: "x", Code: "MODEL_ERROR"},
		&agui.RunFinished{ThreadID: "t", RunID: "r", Outcome: &agui.Outcome{Type: "interrupt", Interrupts: []agui.Interrupt{{ID: "i1", Reason: "approval", Message: "Delete 3 tasks?", ToolCallID: "c1", ResponseSchema: json.RawMessage(`{"type":"object"}`)}}}},
		&agui.RunFinished{ThreadID: "t", RunID: "r", Outcome: &agui.Outcome{Type: "success", PendingToolCallIDs: []string{"c2"}}},
		&agui.RunFinished{ThreadID: "t", RunID: "r", Outcome: &agui.Outcome{Type: "cancelled"}},
	)
	var lines bytes.Buffer
	for _, ev := range evs {
		b, err := agui.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(b)
		lines.WriteByte('\n')
	}
	var out struct {
		Results []struct {
			Type   string          `json:"type"`
			OK     bool            `json:"ok"`
			Issues json.RawMessage `json:"issues"`
		} `json:"results"`
	}
	aguitest.Run(t, lines.Bytes(), &out, "schema")
	if len(out.Results) != len(evs) {
		t.Fatalf("%d results for %d events", len(out.Results), len(evs))
	}
	for _, r := range out.Results {
		if !r.OK {
			t.Errorf("%s does not match EventSchema: %s", r.Type, r.Issues)
		}
	}
}

// TestHttpAgentConsumesStream serves the sample run over SSE and lets
// @ag-ui/client's HttpAgent (which verifies the lifecycle) consume it.
func TestHttpAgentConsumesStream(t *testing.T) {
	aguitest.Require(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		in, err := agui.ParseRunAgentInput(body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Content-Type", agui.ContentType)
		for _, ev := range sampleRun() {
			switch e := ev.(type) { // echo the client's ids, as a server must
			case *agui.RunStarted:
				e.ThreadID, e.RunID = in.ThreadID, in.RunID
			case *agui.RunFinished:
				e.ThreadID, e.RunID = in.ThreadID, in.RunID
			}
			if err := agui.WriteEvent(w, "", ev); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	var out struct {
		Events   []map[string]any `json:"events"`
		Messages []agui.Message   `json:"messages"`
		Error    string           `json:"error"`
	}
	aguitest.Run(t, nil, &out, "agui", srv.URL, `{"threadId":"chat-1","runId":"run-1","messages":[{"id":"u1","role":"user","content":"make a task"}]}`)
	if out.Error != "" {
		t.Fatalf("HttpAgent failed: %s", out.Error)
	}
	if len(out.Events) < len(sampleRun()) {
		t.Errorf("HttpAgent saw %d events", len(out.Events))
	}
	var roles []string
	for _, m := range out.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool,assistant" {
		t.Errorf("HttpAgent's messages: %s (%+v)", got, out.Messages)
	}
}

// TestAISDKReadsUIStream serves the sample run translated to the UI
// Message Stream and assembles it with the `ai` package.
func TestAISDKReadsUIStream(t *testing.T) {
	aguitest.Require(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if _, err := agui.ParseChatRequest(body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		agui.SetUIStreamHeaders(w.Header())
		u := agui.NewUIStream("msg-1")
		var buf []byte
		for _, ev := range sampleRun() {
			for _, c := range u.Translate(ev) {
				buf, _ = agui.AppendChunk(buf, c)
			}
		}
		w.Write(agui.AppendDone(buf))
	}))
	defer srv.Close()
	var out struct {
		Header  string            `json:"header"`
		Invalid []json.RawMessage `json:"invalid"`
		Errors  []string          `json:"errors"`
		Message struct {
			ID    string           `json:"id"`
			Parts []map[string]any `json:"parts"`
		} `json:"message"`
	}
	aguitest.Run(t, nil, &out, "aisdk", srv.URL, `{"id":"chat-1","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"make a task"}]}]}`)
	if out.Header != "v1" || len(out.Invalid) > 0 || len(out.Errors) > 0 {
		t.Fatalf("header %q, invalid chunks %s, errors %v", out.Header, out.Invalid, out.Errors)
	}
	if out.Message.ID != "msg-1" {
		t.Errorf("message id %q", out.Message.ID)
	}
	var kinds []string
	for _, p := range out.Message.Parts {
		k := p["type"].(string)
		if k == "dynamic-tool" {
			k += ":" + p["state"].(string)
		}
		kinds = append(kinds, k)
	}
	if got := strings.Join(kinds, ","); got != "step-start,text,dynamic-tool:output-available,step-start,text" {
		t.Errorf("assembled parts: %s\n%+v", got, out.Message.Parts)
	}
}
