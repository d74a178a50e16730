package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/aguitest"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

type aguiOut struct {
	Events   []map[string]any `json:"events"`
	Messages []agui.Message   `json:"messages"`
	Error    string           `json:"error"`
}

func lastEvent(t *testing.T, out aguiOut) map[string]any {
	t.Helper()
	if out.Error != "" || len(out.Events) == 0 {
		t.Fatalf("HttpAgent: %s (%d events)", out.Error, len(out.Events))
	}
	return out.Events[len(out.Events)-1]
}

// TestAGUIInterruptWithReferenceClient drives the approval round trip with
// @ag-ui/client's HttpAgent: the run ends with the interrupt outcome and
// runs nothing; the client resumes under the interrupted run's own id (as
// CopilotKit does) and the waiting call runs once.
func TestAGUIInterruptWithReferenceClient(t *testing.T) {
	e := newAssistantWith(t, true, true)
	aguitest.Require(t)
	e.model.Push(createThenAnswer...)
	auth := `"headers":{"Authorization":"Bearer ` + token + `"}`
	var out aguiOut
	aguitest.Run(t, nil, &out, "agui", e.srv.URL+"/api/v1/agui", `{"threadId":"chat-hitl","runId":"run-h1",`+auth+`,
		"messages":[{"id":"u1","role":"user","content":"create 'Ship it' in p1"}]}`)
	fin := lastEvent(t, out)
	outcome, _ := fin["outcome"].(map[string]any)
	if fin["type"] != "RUN_FINISHED" || outcome["type"] != "interrupt" {
		t.Fatalf("first run ended %v", fin)
	}
	ints := outcome["interrupts"].([]any)
	in := ints[0].(map[string]any)
	if in["reason"] != "tool_approval" || in["toolCallId"] == "" || in["responseSchema"] == nil || in["expiresAt"] == "" {
		t.Fatalf("interrupt %v", in)
	}
	if len(e.tasks) != 0 {
		t.Fatal("the tool ran before approval")
	}
	a, err := e.approvals.Get(context.Background(), in["id"].(string))
	if err != nil || a.Status != switchboard.ApprovalPending || a.Tool != "tasks.create" {
		t.Fatalf("the interrupt is not the pending approval record: %+v %v", a, err)
	}

	// A resume naming nothing open is refused before any stream starts.
	resp := e.post(t, "POST", "/api/v1/agui", token, `{"threadId":"chat-hitl","runId":"run-h2","messages":[],"tools":[],"context":[],
		"resume":[{"interruptId":"apr_unknown","status":"resolved","payload":{"approved":true}}]}`)
	if resp.StatusCode != 404 || !strings.Contains(decodeJSON(t, resp)["error"].(map[string]any)["message"].(string), "no open interrupt apr_unknown") {
		t.Fatalf("unknown interrupt: %d", resp.StatusCode)
	}

	msgs, _ := json.Marshal(out.Messages)
	var out2 aguiOut
	aguitest.Run(t, nil, &out2, "agui", e.srv.URL+"/api/v1/agui", `{"threadId":"chat-hitl","runId":"run-h1",`+auth+`,
		"messages":`+string(msgs)+`,"resume":[{"interruptId":"`+a.ID+`","status":"resolved","payload":{"approved":true}}]}`)
	fin = lastEvent(t, out2)
	if fin["type"] != "RUN_FINISHED" || fin["outcome"] != nil {
		t.Fatalf("resumed run ended %v", fin)
	}
	var roles []string
	for _, m := range out2.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,tool,assistant" || out2.Messages[3].Content != "Created task t1." {
		t.Errorf("client messages %s: %+v", strings.Join(roles, ","), out2.Messages)
	}
	if len(e.tasks) != 1 || len(e.model.Requests()) != 2 {
		t.Fatalf("tool ran %d times, %d model requests", len(e.tasks), len(e.model.Requests()))
	}
	if a, _ = e.approvals.Get(context.Background(), a.ID); a.Status != switchboard.ApprovalApproved || a.Channel != "agui" || a.DecidedBy != "user:admin" {
		t.Fatalf("approval after resume %+v", a)
	}
}

// TestAGUICapabilities: the AG-UI capability declaration says approvals
// come as interrupts and accept edits; @ag-ui/core's schema accepts it.
func TestAGUICapabilities(t *testing.T) {
	e := newAssistantWith(t, true, true)
	resp := e.post(t, "GET", "/api/v1/agui/capabilities", token, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	caps := decodeJSON(t, resp)
	hitl, _ := caps["humanInTheLoop"].(map[string]any)
	for _, k := range []string{"supported", "approvals", "interrupts", "approveWithEdits"} {
		if hitl[k] != true {
			t.Errorf("humanInTheLoop.%s = %v", k, hitl[k])
		}
	}
	aguitest.Require(t)
	b, _ := json.Marshal(caps)
	var out struct {
		OK     bool            `json:"ok"`
		Issues json.RawMessage `json:"issues"`
	}
	aguitest.Run(t, b, &out, "capabilities")
	if !out.OK {
		t.Fatalf("AgentCapabilitiesSchema rejects the declaration: %s", out.Issues)
	}
}

type aisdkOut struct {
	Header  string            `json:"header"`
	Invalid []json.RawMessage `json:"invalid"`
	Errors  []string          `json:"errors"`
	Error   string            `json:"error"`
	Message map[string]any    `json:"message"`
}

func toolPart(t *testing.T, msg map[string]any) map[string]any {
	t.Helper()
	for _, p := range msg["parts"].([]any) {
		if pm := p.(map[string]any); pm["type"] == "dynamic-tool" {
			return pm
		}
	}
	t.Fatalf("no tool part in %v", msg)
	return nil
}

// TestAISDKToolApprovalWithAIPackage drives useChat's approval flow with
// the `ai` package's own stream reader: the tool part turns
// approval-requested; the client's messages come back with it
// approval-responded (what addToolApprovalResponse makes) and the same
// assistant message continues — output-available with the real result,
// or output-denied.
//
// useChat names the continued message in the request's messageId; a
// client built on readUIMessageStream({message}) may not, and the stream
// must continue that message all the same.
func TestAISDKToolApprovalWithAIPackage(t *testing.T) {
	for _, c := range []struct {
		name             string
		approve, sendsID bool
	}{{"approve", true, true}, {"deny", false, true}, {"approve-without-messageId", true, false}} {
		name, approve := c.name, c.approve
		t.Run(name, func(t *testing.T) {
			e := newAssistantWith(t, true, true)
			aguitest.Require(t)
			e.model.Push(createThenAnswer[0])
			hdr := `{"authorization":"Bearer ` + token + `"}`
			user := `{"id":"u1","role":"user","parts":[{"type":"text","text":"create 'Ship it' in p1"}]}`
			var out aisdkOut
			aguitest.Run(t, nil, &out, "aisdk", e.srv.URL+"/api/v1/agent/chat",
				`{"id":"chat-ai-`+name+`","trigger":"submit-message","messages":[`+user+`]}`, hdr)
			if out.Error != "" || len(out.Invalid) > 0 || len(out.Errors) > 0 {
				t.Fatalf("%+v", out)
			}
			part := toolPart(t, out.Message)
			approval, _ := part["approval"].(map[string]any)
			if part["state"] != "approval-requested" || approval["id"] == nil || len(e.tasks) != 0 {
				t.Fatalf("tool part %v, ran %d", part, len(e.tasks))
			}
			// addToolApprovalResponse({id, approved}) and the resend.
			part["state"] = "approval-responded"
			part["approval"] = map[string]any{"id": approval["id"], "approved": approve, "reason": "checked"}
			asst, _ := json.Marshal(out.Message)
			if approve {
				e.model.Push(createThenAnswer[1])
			} else {
				e.model.Push(modeltest.Turn{Text: "Not created."})
			}
			messageID := ""
			if c.sendsID {
				messageID = `"messageId":"` + out.Message["id"].(string) + `",`
			}
			var out2 aisdkOut
			aguitest.Run(t, nil, &out2, "aisdk", e.srv.URL+"/api/v1/agent/chat",
				`{"id":"chat-ai-`+name+`","trigger":"submit-message",`+messageID+`"messages":[`+user+`,`+string(asst)+`]}`, hdr)
			if out2.Error != "" || len(out2.Invalid) > 0 || len(out2.Errors) > 0 {
				t.Fatalf("%+v", out2)
			}
			part = toolPart(t, out2.Message)
			parts := out2.Message["parts"].([]any)
			text, _ := parts[len(parts)-1].(map[string]any)["text"].(string)
			if approve {
				if part["state"] != "output-available" || !strings.Contains(mustJSON(t, part["output"]), `"t1"`) || len(e.tasks) != 1 || text != "Created task t1." {
					t.Fatalf("approved: part %v, ran %d, text %q", part, len(e.tasks), text)
				}
			} else if part["state"] != "output-denied" || len(e.tasks) != 0 || text != "Not created." {
				t.Fatalf("denied: part %v, ran %d, text %q", part, len(e.tasks), text)
			}
			if out2.Message["id"] != out.Message["id"] {
				t.Errorf("the answer went to another message: %v", out2.Message["id"])
			}
			a, _ := e.approvals.Get(context.Background(), approval["id"].(string))
			if a.Channel != "aisdk" || (a.Status == switchboard.ApprovalApproved) != approve || a.Reason != "checked" {
				t.Fatalf("approval %+v", a)
			}
		})
	}
}

// uiChunks reads a UI Message Stream response into its chunks.
func uiChunks(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %v", resp.StatusCode, decodeJSON(t, resp))
	}
	var out []map[string]any
	if err := agui.ReadFrames(resp.Body, func(_ string, data []byte) error {
		if string(data) == "[DONE]" {
			return nil
		}
		var c map[string]any
		if err := json.Unmarshal(data, &c); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAISDKContinuationKeepsMessageID: the stream answering an approval
// response starts with the id of the assistant message it continues (the
// client's, whatever the first stream called it), with or without the
// request's messageId, as the AI SDK's own server does; a new turn gets
// the stream's own id.
func TestAISDKContinuationKeepsMessageID(t *testing.T) {
	e := newAssistantWith(t, true, true)
	e.model.Push(createThenAnswer[0])
	user := `{"id":"u1","role":"user","parts":[{"type":"text","text":"create 'Ship it' in p1"}]}`
	first := uiChunks(t, e.post(t, "POST", "/api/v1/agent/chat", token, `{"id":"chat-cont","trigger":"submit-message","messages":[`+user+`]}`))
	if first[0]["type"] != "start" || first[0]["messageId"] == "" {
		t.Fatalf("first chunk %v", first[0])
	}
	var approvalID, callID string
	for _, c := range first {
		if c["type"] == "tool-approval-request" {
			approvalID, callID = c["approvalId"].(string), c["toolCallId"].(string)
		}
	}
	if approvalID == "" {
		t.Fatalf("no approval request in %v", first)
	}
	asst := `{"id":"a-client","role":"assistant","parts":[{"type":"step-start"},{"type":"text","text":"On it."},
		{"type":"dynamic-tool","toolName":"tasks.create","toolCallId":"` + callID + `","state":"approval-responded",
		 "input":{"projectId":"p1","title":"Ship it"},"approval":{"id":"` + approvalID + `","approved":true}}]}`
	e.model.Push(createThenAnswer[1])
	cont := uiChunks(t, e.post(t, "POST", "/api/v1/agent/chat", token, `{"id":"chat-cont","trigger":"submit-message","messages":[`+user+`,`+asst+`]}`))
	if cont[0]["type"] != "start" || cont[0]["messageId"] != "a-client" {
		t.Fatalf("the continuation starts %v, want messageId a-client", cont[0])
	}
	if len(e.tasks) != 1 {
		t.Fatalf("the approved call ran %d times", len(e.tasks))
	}
	// A new user turn after it is a new assistant message.
	e.model.Push(modeltest.Turn{Text: "Done."})
	next := uiChunks(t, e.post(t, "POST", "/api/v1/agent/chat", token, `{"id":"chat-cont","trigger":"submit-message","messages":[`+user+`,`+asst+`,
		{"id":"u2","role":"user","parts":[{"type":"text","text":"thanks"}]}]}`))
	if id, _ := next[0]["messageId"].(string); id == "" || id == "a-client" {
		t.Fatalf("a new turn starts %v", next[0])
	}
}
