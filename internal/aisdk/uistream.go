package aisdk

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/sse"
)

// UI Message Stream protocol constants (the `ai` package's
// UI_MESSAGE_STREAM_HEADERS and terminator).
const (
	UIStreamHeader  = "x-vercel-ai-ui-message-stream"
	UIStreamVersion = "v1"
	// UIStreamDone is the data of the frame that ends the stream.
	UIStreamDone = "[DONE]"
)

// SetUIStreamHeaders sets the response headers useChat expects.
func SetUIStreamHeaders(h http.Header) {
	h.Set("Content-Type", sse.ContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set(UIStreamHeader, UIStreamVersion)
	h.Set("X-Accel-Buffering", "no")
}

// Chunk is one UI Message Stream chunk. Only the fields of its type are
// set; Output and Input are raw JSON so a null result stays null.
type Chunk struct {
	Type           string          `json:"type"`
	ID             string          `json:"id,omitempty"`
	MessageID      string          `json:"messageId,omitempty"`
	Delta          string          `json:"delta,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ToolName       string          `json:"toolName,omitempty"`
	InputTextDelta string          `json:"inputTextDelta,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	Output         json.RawMessage `json:"output,omitempty"`
	ErrorText      string          `json:"errorText,omitempty"`
	Dynamic        bool            `json:"dynamic,omitempty"`
	Data           any             `json:"data,omitempty"`
	Transient      bool            `json:"transient,omitempty"`
	FinishReason   string          `json:"finishReason,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	ApprovalID     string          `json:"approvalId,omitempty"`
	// ToolMetadata carries the tool's UI hints on tool chunks
	// ({"switchboard": {"ui": {...}}}); useChat keeps it on the tool part.
	ToolMetadata map[string]any `json:"toolMetadata,omitempty"`
}

// ToolUIData is the data of a data-switchboard-tool-ui part: the UI hints
// (rendererId, displayGroup, icon) of the tool a call uses, keyed by the
// call (the part's id is the toolCallId).
type ToolUIData struct {
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	UI         any    `json:"ui"`
}

// DataToolUI is the type of the tool UI data part.
const DataToolUI = "data-switchboard-tool-ui"

// UIStream translates a run's AG-UI events into UI Message Stream chunks.
// It keeps the little state the translation needs (each tool call's name
// and accumulated arguments). Not safe for concurrent use.
type UIStream struct {
	messageID string
	calls     map[string]*uiCall
	skip      map[string]bool // text messages that are not the assistant's
}

type uiCall struct {
	name string
	args strings.Builder
	meta map[string]any // toolMetadata for the call's chunks
}

// NewUIStream returns a translator; messageID names the assistant message
// the stream builds (empty: the client mints one).
func NewUIStream(messageID string) *UIStream {
	return &UIStream{messageID: messageID, calls: map[string]*uiCall{}, skip: map[string]bool{}}
}

// Translate returns the chunks for ev (often one, sometimes none). Tools
// are marked dynamic: the daemon's tools are not declared in the client's
// typed tool set, so useChat renders them as dynamic-tool parts.
func (u *UIStream) Translate(ev agui.Event) []Chunk {
	switch e := ev.(type) {
	case *agui.RunStarted:
		return []Chunk{{Type: "start", MessageID: u.messageID}}
	case *agui.StepStarted:
		return []Chunk{{Type: "start-step"}}
	case *agui.StepFinished:
		return []Chunk{{Type: "finish-step"}}
	case *agui.TextMessageStart:
		// The stream builds one assistant message; user messages the run
		// echoes (follow-ups) are already in the client's list.
		if e.Role != "" && e.Role != agui.RoleAssistant {
			u.skip[e.MessageID] = true
			return nil
		}
		return []Chunk{{Type: "text-start", ID: e.MessageID}}
	case *agui.TextMessageContent:
		if e.Delta == "" || u.skip[e.MessageID] {
			return nil
		}
		return []Chunk{{Type: "text-delta", ID: e.MessageID, Delta: e.Delta}}
	case *agui.TextMessageEnd:
		if u.skip[e.MessageID] {
			delete(u.skip, e.MessageID)
			return nil
		}
		return []Chunk{{Type: "text-end", ID: e.MessageID}}
	case *agui.ToolCallStart:
		c := &uiCall{name: e.ToolCallName}
		u.calls[e.ToolCallID] = c
		out := []Chunk{{Type: "tool-input-start", ToolCallID: e.ToolCallID, ToolName: e.ToolCallName, Dynamic: true}}
		if sb, ok := e.Metadata["switchboard"].(map[string]any); ok && sb["ui"] != nil {
			c.meta = map[string]any{"switchboard": map[string]any{"ui": sb["ui"]}}
			out[0].ToolMetadata = c.meta
			out = append(out, Chunk{Type: DataToolUI, ID: e.ToolCallID, Data: ToolUIData{ToolCallID: e.ToolCallID, ToolName: e.ToolCallName, UI: sb["ui"]}})
		}
		return out
	case *agui.ToolCallArgs:
		if c := u.calls[e.ToolCallID]; c != nil {
			c.args.WriteString(e.Delta)
		}
		if e.Delta == "" {
			return nil
		}
		return []Chunk{{Type: "tool-input-delta", ToolCallID: e.ToolCallID, InputTextDelta: e.Delta}}
	case *agui.ToolCallEnd:
		c := u.calls[e.ToolCallID]
		if c == nil {
			return nil
		}
		return []Chunk{{Type: "tool-input-available", ToolCallID: e.ToolCallID, ToolName: c.name, Input: jsonOrString(c.args.String(), "{}"), Dynamic: true, ToolMetadata: c.meta}}
	case *agui.ToolCallResult:
		if e.IsError {
			if sb, ok := e.Metadata["switchboard"].(map[string]any); ok && fmt.Sprint(sb["code"]) == "USER_DENIED" {
				// The user said no: the part ends output-denied, as a
				// denial in useChat's own approval flow does.
				return []Chunk{{Type: "tool-output-denied", ToolCallID: e.ToolCallID}}
			}
			return []Chunk{{Type: "tool-output-error", ToolCallID: e.ToolCallID, ErrorText: e.Content, Dynamic: true}}
		}
		return []Chunk{{Type: "tool-output-available", ToolCallID: e.ToolCallID, Output: jsonOrString(e.Content, "null"), Dynamic: true}}
	case *agui.Custom:
		return []Chunk{{Type: "data-" + strings.ReplaceAll(e.Name, ".", "-"), Data: orEmpty(e.Value), Transient: true}}
	case *agui.RunFinished:
		reason := "stop"
		var out []Chunk
		if e.Outcome != nil {
			switch e.Outcome.Type {
			case agui.OutcomeCancelled:
				return []Chunk{{Type: "abort", Reason: "cancelled"}}
			case agui.OutcomeInterrupt:
				// Each tool approval the run stopped at becomes the tool
				// part's approval request (state approval-requested); the
				// approval id is the interrupt id, answered on the next POST.
				for _, in := range e.Outcome.Interrupts {
					if in.ToolCallID != "" {
						out = append(out, Chunk{Type: "tool-approval-request", ApprovalID: in.ID, ToolCallID: in.ToolCallID})
					}
				}
				reason = "other"
			case agui.OutcomeSuccess:
				if len(e.Outcome.PendingToolCallIDs) > 0 {
					reason = "tool-calls"
				}
			}
		}
		return append(out, Chunk{Type: "finish", FinishReason: reason})
	case *agui.RunError:
		return []Chunk{{Type: "error", ErrorText: e.Message}, {Type: "finish", FinishReason: "error"}}
	}
	return nil // state and message snapshots have no UI stream form
}

// AppendChunk appends c as one SSE frame.
func AppendChunk(dst []byte, c Chunk) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return dst, err
	}
	return sse.AppendEvent(dst, sse.Event{Data: b}), nil
}

// AppendDone appends the terminating `data: [DONE]` frame.
func AppendDone(dst []byte) []byte {
	return sse.AppendEvent(dst, sse.Event{Data: []byte(UIStreamDone)})
}

// jsonOrString keeps valid JSON text as it is and wraps anything else as a
// JSON string; empty text becomes def.
func jsonOrString(s, def string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage(def)
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

func orEmpty(v any) any {
	if v == nil {
		return struct{}{}
	}
	return v
}
