package agui

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventType is an AG-UI event's discriminator.
type EventType string

// The AG-UI 1.0 event types switchboard emits or accepts.
const (
	TypeRunStarted         EventType = "RUN_STARTED"
	TypeRunFinished        EventType = "RUN_FINISHED"
	TypeRunError           EventType = "RUN_ERROR"
	TypeStepStarted        EventType = "STEP_STARTED"
	TypeStepFinished       EventType = "STEP_FINISHED"
	TypeTextMessageStart   EventType = "TEXT_MESSAGE_START"
	TypeTextMessageContent EventType = "TEXT_MESSAGE_CONTENT"
	TypeTextMessageEnd     EventType = "TEXT_MESSAGE_END"
	TypeToolCallStart      EventType = "TOOL_CALL_START"
	TypeToolCallArgs       EventType = "TOOL_CALL_ARGS"
	TypeToolCallEnd        EventType = "TOOL_CALL_END"
	TypeToolCallResult     EventType = "TOOL_CALL_RESULT"
	TypeStateSnapshot      EventType = "STATE_SNAPSHOT"
	TypeStateDelta         EventType = "STATE_DELTA"
	TypeMessagesSnapshot   EventType = "MESSAGES_SNAPSHOT"
	TypeCustom             EventType = "CUSTOM"
)

// Event is one AG-UI event. Implementations are the pointer types below;
// Marshal fills in the type discriminator.
type Event interface {
	EventType() EventType
	base() *Base
}

// Base holds the fields every event may carry.
type Base struct {
	Type EventType `json:"type"`
	// Timestamp is milliseconds since the epoch.
	Timestamp int64          `json:"timestamp,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

func (b *Base) base() *Base { return b }

// SetTimestamp stamps the event (milliseconds since the epoch).
func (b *Base) SetTimestamp(t time.Time) { b.Timestamp = t.UnixMilli() }

// RunStarted opens a run; it is always the first event of a run.
type RunStarted struct {
	Base
	ThreadID    string `json:"threadId"`
	RunID       string `json:"runId"`
	ParentRunID string `json:"parentRunId,omitempty"`
}

// RunFinished closes a run that did not fail. Outcome nil means success.
type RunFinished struct {
	Base
	ThreadID string       `json:"threadId"`
	RunID    string       `json:"runId"`
	Result   any          `json:"result,omitempty"`
	Outcome  *Outcome     `json:"outcome,omitempty"`
	Usage    []TokenUsage `json:"usage,omitempty"`
}

// Outcome says why a run ended: success (possibly leaving frontend tool
// calls for the client to answer), interrupt (waiting for a human; resumed
// by a new run carrying resume entries) or cancelled.
type Outcome struct {
	Type               string      `json:"type"`
	PendingToolCallIDs []string    `json:"pendingToolCallIds,omitempty"`
	Interrupts         []Interrupt `json:"interrupts,omitempty"`
}

// Outcome types.
const (
	OutcomeSuccess   = "success"
	OutcomeInterrupt = "interrupt"
	OutcomeCancelled = "cancelled"
)

// Interrupt is something a paused run needs from outside (an approval).
type Interrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	ExpiresAt      string          `json:"expiresAt,omitempty"`
	Metadata       map[string]any  `json:"metadata,omitempty"`
}

// TokenUsage is one provider/model's token counts for a run.
type TokenUsage struct {
	Provider          string `json:"provider,omitempty"`
	Model             string `json:"model,omitempty"`
	InputTokens       int64  `json:"inputTokens"`
	OutputTokens      int64  `json:"outputTokens"`
	TotalTokens       int64  `json:"totalTokens"`
	CachedInputTokens int64  `json:"cachedInputTokens,omitempty"`
}

// RunError ends a run that failed. Code is a switchboard error code.
type RunError struct {
	Base
	Message string       `json:"message"`
	Code    string       `json:"code,omitempty"`
	Usage   []TokenUsage `json:"usage,omitempty"`
}

// StepStarted opens a named step (switchboard: one model turn and its tool
// calls).
type StepStarted struct {
	Base
	StepName string `json:"stepName"`
}

// StepFinished closes a named step.
type StepFinished struct {
	Base
	StepName string `json:"stepName"`
}

// TextMessageStart opens a streamed text message.
type TextMessageStart struct {
	Base
	MessageID string `json:"messageId"`
	Role      string `json:"role,omitempty"`
}

// TextMessageContent appends to an open text message.
type TextMessageContent struct {
	Base
	MessageID string `json:"messageId"`
	Delta     string `json:"delta"`
}

// TextMessageEnd closes a text message.
type TextMessageEnd struct {
	Base
	MessageID string `json:"messageId"`
}

// ToolCallStart opens a tool call.
type ToolCallStart struct {
	Base
	ToolCallID      string `json:"toolCallId"`
	ToolCallName    string `json:"toolCallName"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
}

// ToolCallArgs appends a fragment of a tool call's JSON arguments.
type ToolCallArgs struct {
	Base
	ToolCallID string `json:"toolCallId"`
	Delta      string `json:"delta"`
}

// ToolCallEnd closes a tool call: its arguments are complete.
type ToolCallEnd struct {
	Base
	ToolCallID string `json:"toolCallId"`
}

// ToolCallResult carries what a tool returned, as a new tool message.
// IsError is not on the AG-UI wire (the content says what failed); it lets
// other encodings tell a failed call from a result.
type ToolCallResult struct {
	Base
	MessageID  string `json:"messageId"`
	ToolCallID string `json:"toolCallId"`
	Content    string `json:"content"`
	Role       string `json:"role,omitempty"`
	IsError    bool   `json:"-"`
}

// StateSnapshot replaces the agent state.
type StateSnapshot struct {
	Base
	Snapshot any `json:"snapshot"`
}

// StateDelta changes the agent state with RFC 6902 operations.
type StateDelta struct {
	Base
	Delta []json.RawMessage `json:"delta"`
}

// MessagesSnapshot is the conversation the producer owns, in order.
type MessagesSnapshot struct {
	Base
	Messages []Message `json:"messages"`
}

// Custom is an application event: switchboard uses it for browser
// dispatch, approvals, follow-ups and usage (names prefixed "switchboard.").
type Custom struct {
	Base
	Name  string `json:"name"`
	Value any    `json:"value"`
}

func (*RunStarted) EventType() EventType         { return TypeRunStarted }
func (*RunFinished) EventType() EventType        { return TypeRunFinished }
func (*RunError) EventType() EventType           { return TypeRunError }
func (*StepStarted) EventType() EventType        { return TypeStepStarted }
func (*StepFinished) EventType() EventType       { return TypeStepFinished }
func (*TextMessageStart) EventType() EventType   { return TypeTextMessageStart }
func (*TextMessageContent) EventType() EventType { return TypeTextMessageContent }
func (*TextMessageEnd) EventType() EventType     { return TypeTextMessageEnd }
func (*ToolCallStart) EventType() EventType      { return TypeToolCallStart }
func (*ToolCallArgs) EventType() EventType       { return TypeToolCallArgs }
func (*ToolCallEnd) EventType() EventType        { return TypeToolCallEnd }
func (*ToolCallResult) EventType() EventType     { return TypeToolCallResult }
func (*StateSnapshot) EventType() EventType      { return TypeStateSnapshot }
func (*StateDelta) EventType() EventType         { return TypeStateDelta }
func (*MessagesSnapshot) EventType() EventType   { return TypeMessagesSnapshot }
func (*Custom) EventType() EventType             { return TypeCustom }

// Marshal encodes ev as its AG-UI JSON, setting the type discriminator.
func Marshal(ev Event) ([]byte, error) {
	ev.base().Type = ev.EventType()
	if c, ok := ev.(*Custom); ok && c.Value == nil {
		c.Value = struct{}{} // value is required and must not be undefined
	}
	if s, ok := ev.(*StateSnapshot); ok && s.Snapshot == nil {
		s.Snapshot = struct{}{}
	}
	if d, ok := ev.(*StateDelta); ok && d.Delta == nil {
		d.Delta = []json.RawMessage{}
	}
	if m, ok := ev.(*MessagesSnapshot); ok && m.Messages == nil {
		m.Messages = []Message{}
	}
	return json.Marshal(ev)
}

// Decode parses one AG-UI event. Unknown event types are an error: callers
// that must tolerate them check the type first.
func Decode(b []byte) (Event, error) {
	var head struct {
		Type EventType `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("agui: event is not a JSON object: %w", err)
	}
	var ev Event
	switch head.Type {
	case TypeRunStarted:
		ev = &RunStarted{}
	case TypeRunFinished:
		ev = &RunFinished{}
	case TypeRunError:
		ev = &RunError{}
	case TypeStepStarted:
		ev = &StepStarted{}
	case TypeStepFinished:
		ev = &StepFinished{}
	case TypeTextMessageStart:
		ev = &TextMessageStart{}
	case TypeTextMessageContent:
		ev = &TextMessageContent{}
	case TypeTextMessageEnd:
		ev = &TextMessageEnd{}
	case TypeToolCallStart:
		ev = &ToolCallStart{}
	case TypeToolCallArgs:
		ev = &ToolCallArgs{}
	case TypeToolCallEnd:
		ev = &ToolCallEnd{}
	case TypeToolCallResult:
		ev = &ToolCallResult{}
	case TypeStateSnapshot:
		ev = &StateSnapshot{}
	case TypeStateDelta:
		ev = &StateDelta{}
	case TypeMessagesSnapshot:
		ev = &MessagesSnapshot{}
	case TypeCustom:
		ev = &Custom{}
	default:
		return nil, fmt.Errorf("agui: unknown event type %q", head.Type)
	}
	if err := json.Unmarshal(b, ev); err != nil {
		return nil, fmt.Errorf("agui: %s: %w", head.Type, err)
	}
	return ev, nil
}

// Capabilities is an AG-UI AgentCapabilities declaration, as much of it as
// switchboard declares (omitted groups are undeclared, not unsupported).
type Capabilities struct {
	Identity       *IdentityCapabilities       `json:"identity,omitempty"`
	Transport      *TransportCapabilities      `json:"transport,omitempty"`
	Tools          *ToolsCapabilities          `json:"tools,omitempty"`
	State          *StateCapabilities          `json:"state,omitempty"`
	HumanInTheLoop *HumanInTheLoopCapabilities `json:"humanInTheLoop,omitempty"`
}

// IdentityCapabilities names the agent.
type IdentityCapabilities struct {
	Name        string `json:"name,omitempty"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	Version     string `json:"version,omitempty"`
}

// TransportCapabilities says how runs stream.
type TransportCapabilities struct {
	Streaming bool `json:"streaming,omitempty"`
	Resumable bool `json:"resumable,omitempty"`
}

// ToolsCapabilities says whether the agent calls tools, in parallel, and
// runs the client's own (frontend) tools.
type ToolsCapabilities struct {
	Supported      bool `json:"supported,omitempty"`
	ParallelCalls  bool `json:"parallelCalls,omitempty"`
	ClientProvided bool `json:"clientProvided,omitempty"`
}

// StateCapabilities says how the agent treats the client's state.
type StateCapabilities struct {
	Snapshots bool `json:"snapshots,omitempty"`
}

// HumanInTheLoopCapabilities says how the agent asks a person: approvals
// as interrupts (RUN_FINISHED outcome interrupt, answered in
// RunAgentInput.resume), with edited arguments accepted.
type HumanInTheLoopCapabilities struct {
	Supported        bool `json:"supported,omitempty"`
	Approvals        bool `json:"approvals,omitempty"`
	Interrupts       bool `json:"interrupts,omitempty"`
	ApproveWithEdits bool `json:"approveWithEdits,omitempty"`
}
