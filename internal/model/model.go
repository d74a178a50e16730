// Package model is switchboard's model-agnostic access to language models:
// one neutral streaming interface (Provider) over provider wire formats,
// implemented for OpenAI-compatible Chat Completions (OpenAI, Ollama, vLLM,
// llama.cpp's server, hosted gateways) through the official openai-go SDK and
// for Anthropic Messages through the official anthropic-sdk-go SDK.
//
// Sessions and runs never name a provider or a model id: they name an alias
// ("default"), and a Resolver maps the alias to a Binding — the provider, the
// model id, its capabilities and prices — from the `models:` section of the
// daemon's config file (see Config). No provider is baked in: with none
// configured, Resolve fails at once with MODEL_ERROR saying how to configure
// one. API keys are read from the named environment variable at call time
// and never stored. A host embedding switchboard can supply its own Resolver.
//
// The agent loop (package agent) is the only caller; it turns the streamed
// Events into run events and the final Response into the conversation.
package model

import (
	"context"
	"encoding/json"
)

// Role is who wrote a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of the conversation in the neutral form every
// provider translates from.
type Message struct {
	Role Role `json:"role"`
	// Content is the text of the message (a tool message: the tool's result).
	Content string `json:"content,omitempty"`
	// Images are attached to a user message (vision models only).
	Images []Image `json:"images,omitempty"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"toolCallId,omitempty"`
	// IsError marks a tool message that reports a failed call.
	IsError bool `json:"isError,omitempty"`
}

// Image is an image given to a vision model: an http(s) URL or a data: URL.
type Image struct {
	URL string `json:"url"`
}

// ToolCall is one call the model made. Args is the JSON text of the
// arguments exactly as the model produced it (it may not be valid JSON; the
// broker validates it).
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// Tool is a tool offered to the model. Schema is the raw JSON Schema of its
// input (an object schema).
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
}

// Request is one model turn.
type Request struct {
	// Model is the provider's model id (the Binding fills it).
	Model    string
	System   string
	Messages []Message
	Tools    []Tool
	// MaxTokens bounds the answer; zero means the provider's default (the
	// Anthropic provider must send one and uses DefaultMaxTokens).
	MaxTokens int
}

// EventType says what an Event carries.
type EventType string

const (
	// EventText carries a fragment of the answer's text.
	EventText EventType = "text"
	// EventToolStart opens a tool call (ToolCallID, ToolName).
	EventToolStart EventType = "tool.start"
	// EventToolArgs carries a fragment of a tool call's arguments.
	EventToolArgs EventType = "tool.args"
	// EventToolEnd closes a tool call: its arguments are complete.
	EventToolEnd EventType = "tool.end"
)

// Event is one streamed fragment of a model turn. Tool call events of one
// call always come as start, zero or more args, end.
type Event struct {
	Type       EventType
	Text       string // EventText
	ToolCallID string // tool events
	ToolName   string // EventToolStart
	ArgsDelta  string // EventToolArgs
}

// Usage counts the tokens of one turn.
type Usage struct {
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	CachedInputTokens int64 `json:"cachedInputTokens,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
	}
}

// Total is input plus output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// FinishReason says why a turn ended.
type FinishReason string

const (
	FinishStop          FinishReason = "stop"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishLength        FinishReason = "length"
	FinishContentFilter FinishReason = "content_filter"
	FinishOther         FinishReason = "other"
)

// Response is a completed turn: the assistant message (text and tool
// calls, assembled from the events), its usage and why it ended.
type Response struct {
	Message Message
	Usage   Usage
	Finish  FinishReason
	// Model is the model id the provider says answered ("" if it did
	// not say): a trace's gen_ai.response.model.
	Model string
}

// Provider streams one model turn. Stream calls emit for every fragment, in
// order, on the calling goroutine, and returns the assembled Response. A
// failure is a *switchboard.Error with code MODEL_ERROR (or CANCELLED /
// TIMEOUT when ctx ended); events already emitted stay emitted.
type Provider interface {
	Stream(ctx context.Context, req Request, emit func(Event)) (Response, error)
}

// assembler builds a Response from a provider's fragments and emits the
// matching Events, so both providers report tool calls identically.
type assembler struct {
	emit  func(Event)
	text  []byte
	calls []*openCall
	byKey map[string]*openCall
}

type openCall struct {
	call  ToolCall
	ended bool
}

func newAssembler(emit func(Event)) *assembler {
	if emit == nil {
		emit = func(Event) {}
	}
	return &assembler{emit: emit, byKey: map[string]*openCall{}}
}

func (a *assembler) textDelta(s string) {
	if s == "" {
		return
	}
	a.text = append(a.text, s...)
	a.emit(Event{Type: EventText, Text: s})
}

// start opens the call known to the provider as key (an index or block
// number) unless it is open already.
func (a *assembler) start(key, id, name string) {
	if _, ok := a.byKey[key]; ok {
		return
	}
	c := &openCall{call: ToolCall{ID: id, Name: name}}
	a.byKey[key] = c
	a.calls = append(a.calls, c)
	a.emit(Event{Type: EventToolStart, ToolCallID: id, ToolName: name})
}

func (a *assembler) args(key, delta string) {
	c, ok := a.byKey[key]
	if !ok || c.ended || delta == "" {
		return
	}
	c.call.Args += delta
	a.emit(Event{Type: EventToolArgs, ToolCallID: c.call.ID, ArgsDelta: delta})
}

func (a *assembler) end(key string) {
	c, ok := a.byKey[key]
	if !ok || c.ended {
		return
	}
	c.ended = true
	a.emit(Event{Type: EventToolEnd, ToolCallID: c.call.ID})
}

// endAll closes every call still open, in the order they started.
func (a *assembler) endAll() {
	for _, c := range a.calls {
		if !c.ended {
			c.ended = true
			a.emit(Event{Type: EventToolEnd, ToolCallID: c.call.ID})
		}
	}
}

func (a *assembler) message() Message {
	m := Message{Role: RoleAssistant, Content: string(a.text)}
	for _, c := range a.calls {
		m.ToolCalls = append(m.ToolCalls, c.call)
	}
	return m
}
