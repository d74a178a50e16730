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
	"github.com/switchboardhq/switchboard/internal/aguitest"
)

// TestEventsMatchZodSchemas validates every event of the sample run with
// @ag-ui/core's own EventSchema.
func TestEventsMatchZodSchemas(t *testing.T) {
	aguitest.Require(t)
	evs := append(aguitest.SampleRun(),
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
		for _, ev := range aguitest.SampleRun() {
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
	if len(out.Events) < len(aguitest.SampleRun()) {
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
