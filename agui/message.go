package agui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Message is one AG-UI conversation message. Content is text; a user or
// tool message may instead carry Parts (text and media), which then encode
// as the content array.
type Message struct {
	ID         string     `json:"id"`
	Role       string     `json:"role"`
	Content    string     `json:"-"`
	Parts      []Part     `json:"-"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
	// Error is set on a tool message whose call failed.
	Error string `json:"error,omitempty"`
}

// Message roles.
const (
	RoleDeveloper = "developer"
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Part is one part of a message body.
type Part struct {
	Type   string  `json:"type"` // text, image, audio, video, document
	Text   string  `json:"text,omitempty"`
	Source *Source `json:"source,omitempty"`
}

// Source says where a media part's bytes are: inline ("data", base64
// value), by URL ("url") or at the provider ("file").
type Source struct {
	Type     string `json:"type"`
	Value    string `json:"value"`
	MimeType string `json:"mimeType,omitempty"`
}

// ToolCall is a call an assistant message made.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // always "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is a tool call's name and JSON arguments text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type messageJSON struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ToolCall      `json:"toolCalls,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Error      string          `json:"error,omitempty"`
}

// MarshalJSON writes content as a string, or as the parts array when Parts
// is set. An assistant message with only tool calls omits content.
func (m Message) MarshalJSON() ([]byte, error) {
	j := messageJSON{ID: m.ID, Role: m.Role, Name: m.Name, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Error: m.Error}
	var err error
	switch {
	case len(m.Parts) > 0:
		j.Content, err = json.Marshal(m.Parts)
	case m.Role == RoleAssistant && m.Content == "":
	default:
		j.Content, err = json.Marshal(m.Content)
	}
	if err != nil {
		return nil, err
	}
	for i := range j.ToolCalls {
		if j.ToolCalls[i].Type == "" {
			j.ToolCalls[i].Type = "function"
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON accepts content as a string or an array of parts. Text
// parts are also joined into Content, so readers that only want text can
// ignore Parts.
func (m *Message) UnmarshalJSON(b []byte) error {
	var j messageJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Message{ID: j.ID, Role: j.Role, Name: j.Name, ToolCalls: j.ToolCalls, ToolCallID: j.ToolCallID, Error: j.Error}
	c := bytes.TrimSpace(j.Content)
	switch {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
	case c[0] == '"':
		return json.Unmarshal(c, &m.Content)
	case c[0] == '[':
		if err := json.Unmarshal(c, &m.Parts); err != nil {
			return fmt.Errorf("content parts: %w", err)
		}
		var texts []string
		for _, p := range m.Parts {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		m.Content = strings.Join(texts, "\n")
	case m.Role == "activity": // content is an object; keep the text empty
	default:
		return fmt.Errorf("message %s: content must be a string or an array of parts", j.ID)
	}
	return nil
}

// Tool is a client-provided (frontend) tool: the agent may call it, and the
// client executes it and answers in the next run with a tool message.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Context is ambient information given to the agent for a run.
type Context struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// ResumeEntry answers one interrupt of the previous run.
type ResumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"` // resolved | cancelled
	Payload     json.RawMessage `json:"payload,omitempty"`
}

// RunAgentInput is the body an AG-UI client POSTs to start a run.
type RunAgentInput struct {
	ThreadID        string          `json:"threadId"`
	RunID           string          `json:"runId"`
	ParentRunID     string          `json:"parentRunId,omitempty"`
	ProtocolVersion string          `json:"protocolVersion,omitempty"`
	State           json.RawMessage `json:"state,omitempty"`
	Messages        []Message       `json:"messages"`
	Tools           []Tool          `json:"tools"`
	Context         []Context       `json:"context"`
	ForwardedProps  json.RawMessage `json:"forwardedProps,omitempty"`
	Resume          []ResumeEntry   `json:"resume,omitempty"`
}

// ParseRunAgentInput decodes and checks a RunAgentInput. Unknown fields
// are allowed (the AG-UI schemas are open), malformed known ones are not.
func ParseRunAgentInput(b []byte) (RunAgentInput, error) {
	var in RunAgentInput
	if err := json.Unmarshal(b, &in); err != nil {
		return in, fmt.Errorf("RunAgentInput: %w", err)
	}
	if in.ThreadID == "" || in.RunID == "" {
		return in, fmt.Errorf("RunAgentInput: threadId and runId are required")
	}
	if in.Messages == nil {
		return in, fmt.Errorf("RunAgentInput: messages is required (an empty array is fine)")
	}
	for i, m := range in.Messages {
		switch m.Role {
		case RoleDeveloper, RoleSystem, RoleUser, RoleAssistant, "activity", "reasoning":
		case RoleTool:
			if m.ToolCallID == "" {
				return in, fmt.Errorf("RunAgentInput: messages[%d] is a tool message without toolCallId", i)
			}
		default:
			return in, fmt.Errorf("RunAgentInput: messages[%d] has unknown role %q", i, m.Role)
		}
		if m.ID == "" {
			return in, fmt.Errorf("RunAgentInput: messages[%d] has no id", i)
		}
	}
	for i, t := range in.Tools {
		if t.Name == "" {
			return in, fmt.Errorf("RunAgentInput: tools[%d] has no name", i)
		}
		if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && p[0] != '{' {
			return in, fmt.Errorf("RunAgentInput: tools[%d] (%s) parameters must be a JSON Schema object", i, t.Name)
		}
	}
	for i, r := range in.Resume {
		if r.InterruptID == "" || (r.Status != "resolved" && r.Status != "cancelled") {
			return in, fmt.Errorf("RunAgentInput: resume[%d] needs interruptId and status resolved or cancelled", i)
		}
	}
	return in, nil
}
