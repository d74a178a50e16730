package aisdk

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard/agui"
)

// ChatRequest is the body useChat's DefaultChatTransport POSTs. Fields the
// app adds through the transport's `body` option are kept in Extra.
type ChatRequest struct {
	ID        string                     `json:"id"`
	Messages  []UIMessage                `json:"messages"`
	Trigger   string                     `json:"trigger"` // submit-message | regenerate-message
	MessageID string                     `json:"messageId,omitempty"`
	Extra     map[string]json.RawMessage `json:"-"`
}

// UIMessage is an AI SDK UI message.
type UIMessage struct {
	ID       string          `json:"id"`
	Role     string          `json:"role"` // system | user | assistant
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Parts    []UIPart        `json:"parts"`
}

// UIPart is one part of a UIMessage. Tool parts have type "dynamic-tool"
// (with ToolName) or "tool-<name>".
type UIPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	MediaType  string          `json:"mediaType,omitempty"`
	URL        string          `json:"url,omitempty"`
	Filename   string          `json:"filename,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	State      string          `json:"state,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	ErrorText  string          `json:"errorText,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	// Approval is a tool part's approval: {id} once requested, with
	// approved (and reason) once the user answered (addToolApprovalResponse).
	Approval *UIApproval `json:"approval,omitempty"`
}

// UIApproval is a tool part's approval state.
type UIApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// ApprovalResponses turns the user's answers to tool approvals — tool
// parts in state approval-responded on the last message, an assistant
// message, as useChat sends them after addToolApprovalResponse — into
// resume entries for the run's interrupts (the approval id is the
// interrupt id). Answers on earlier messages were already consumed.
func ApprovalResponses(ms []UIMessage) []agui.ResumeEntry {
	if len(ms) == 0 || ms[len(ms)-1].Role != agui.RoleAssistant {
		return nil
	}
	var out []agui.ResumeEntry
	for _, p := range ms[len(ms)-1].Parts {
		if _, ok := p.toolPart(); !ok || p.State != "approval-responded" || p.Approval == nil || p.Approval.Approved == nil {
			continue
		}
		payload, _ := json.Marshal(map[string]any{"approved": *p.Approval.Approved, "reason": p.Approval.Reason, "toolCallId": p.ToolCallID})
		out = append(out, agui.ResumeEntry{InterruptID: p.Approval.ID, Status: "resolved", Payload: payload})
	}
	return out
}

// ResponseMessageID is the id of the assistant message a response stream
// builds for a request whose messages (after a regenerate's answer is
// dropped) are ms. A continuation — the last message is the assistant's,
// as after an approval response or a client-side tool output — keeps that
// message's id, as the AI SDK's own server does (handleUIMessageStreamFinish):
// readUIMessageStream({message}) resets the message when the stream's start
// names another id, and then finds none of the tool calls it continues.
// Otherwise it is requested (the request's messageId; "" lets the caller
// choose).
func ResponseMessageID(requested string, ms []UIMessage) string {
	if n := len(ms); n > 0 && ms[n-1].Role == agui.RoleAssistant && ms[n-1].ID != "" {
		return ms[n-1].ID
	}
	return requested
}

// ParseChatRequest decodes a DefaultChatTransport body.
func ParseChatRequest(b []byte) (ChatRequest, error) {
	var req ChatRequest
	if err := json.Unmarshal(b, &req); err != nil {
		return req, fmt.Errorf("chat request: %w", err)
	}
	var all map[string]json.RawMessage
	_ = json.Unmarshal(b, &all)
	for _, k := range []string{"id", "messages", "trigger", "messageId"} {
		delete(all, k)
	}
	if len(all) > 0 {
		req.Extra = all
	}
	if req.ID == "" {
		return req, fmt.Errorf("chat request: id (the chat id) is required")
	}
	if req.Messages == nil {
		return req, fmt.Errorf("chat request: messages is required")
	}
	switch req.Trigger {
	case "", "submit-message", "regenerate-message":
	default:
		return req, fmt.Errorf("chat request: unknown trigger %q", req.Trigger)
	}
	for i, m := range req.Messages {
		switch m.Role {
		case agui.RoleSystem, agui.RoleUser, agui.RoleAssistant:
		default:
			return req, fmt.Errorf("chat request: messages[%d] has unknown role %q", i, m.Role)
		}
	}
	return req, nil
}

// toolPart reports whether p is a tool part and its tool name.
func (p UIPart) toolPart() (string, bool) {
	if p.Type == "dynamic-tool" {
		return p.ToolName, true
	}
	if name, ok := strings.CutPrefix(p.Type, "tool-"); ok {
		return name, true
	}
	return "", false
}

// FromUIMessages converts AI SDK UI messages into AG-UI messages: text and
// image files of user messages, and for assistant messages one assistant
// message per step (text and tool calls) followed by the tool results it
// already has. Reasoning, sources and data parts carry nothing the model
// needs and are dropped.
func FromUIMessages(ms []UIMessage) []agui.Message {
	var out []agui.Message
	for _, m := range ms {
		switch m.Role {
		case agui.RoleSystem, agui.RoleUser:
			msg := agui.Message{ID: m.ID, Role: m.Role}
			var texts []string
			for _, p := range m.Parts {
				switch {
				case p.Type == "text":
					texts = append(texts, p.Text)
				case p.Type == "file" && strings.HasPrefix(p.MediaType, "image/") && p.URL != "":
					msg.Parts = append(msg.Parts, agui.Part{Type: "image", Source: imageSource(p.URL, p.MediaType)})
				}
			}
			msg.Content = strings.Join(texts, "\n")
			if len(msg.Parts) > 0 {
				msg.Parts = append([]agui.Part{{Type: "text", Text: msg.Content}}, msg.Parts...)
			}
			out = append(out, msg)
		case agui.RoleAssistant:
			out = append(out, assistantSteps(m)...)
		}
	}
	return out
}

// assistantSteps splits an assistant UIMessage at its step-start parts.
func assistantSteps(m UIMessage) []agui.Message {
	var (
		out     []agui.Message
		cur     agui.Message
		results []agui.Message
		step    int
	)
	flush := func() {
		if cur.Content != "" || len(cur.ToolCalls) > 0 {
			out = append(out, cur)
			out = append(out, results...)
		}
		step++
		cur = agui.Message{ID: fmt.Sprintf("%s-%d", m.ID, step), Role: agui.RoleAssistant}
		if step == 1 {
			cur.ID = m.ID
		}
		results = nil
	}
	flush()
	step = 1
	for _, p := range m.Parts {
		if p.Type == "step-start" {
			if cur.Content != "" || len(cur.ToolCalls) > 0 {
				flush()
			}
			continue
		}
		if p.Type == "text" {
			if cur.Content != "" {
				cur.Content += "\n"
			}
			cur.Content += p.Text
			continue
		}
		name, ok := p.toolPart()
		if !ok || p.ToolCallID == "" {
			continue
		}
		args := string(p.Input)
		if args == "" || args == "null" {
			args = "{}"
		}
		cur.ToolCalls = append(cur.ToolCalls, agui.ToolCall{ID: p.ToolCallID, Type: "function", Function: agui.FunctionCall{Name: name, Arguments: args}})
		switch p.State {
		case "output-available":
			out := string(p.Output)
			if out == "" {
				out = "null"
			}
			results = append(results, agui.Message{ID: p.ToolCallID + "-result", Role: agui.RoleTool, ToolCallID: p.ToolCallID, Content: unquote(out)})
		case "output-error", "output-denied":
			msg := p.ErrorText
			if msg == "" {
				msg = "the call was denied"
			}
			results = append(results, agui.Message{ID: p.ToolCallID + "-result", Role: agui.RoleTool, ToolCallID: p.ToolCallID, Content: msg, Error: msg})
		}
	}
	flush()
	return out
}

// unquote turns a JSON string result into its text and leaves other JSON
// as it is, so the model sees "done" rather than "\"done\"".
func unquote(s string) string {
	var str string
	if strings.HasPrefix(s, `"`) && json.Unmarshal([]byte(s), &str) == nil {
		return str
	}
	return s
}

func imageSource(url, mediaType string) *agui.Source {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		if _, data, ok := strings.Cut(rest, ","); ok {
			return &agui.Source{Type: "data", Value: data, MimeType: mediaType}
		}
	}
	return &agui.Source{Type: "url", Value: url, MimeType: mediaType}
}
