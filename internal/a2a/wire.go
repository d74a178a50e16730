package a2a

import (
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
)

// The A2A 1.0 wire records this binding reads and writes: the JSON form
// of the protocol's messages (camelCase members, enums as their
// SCREAMING_SNAKE names), as the official SDKs encode them.

// ProtocolVersion is the A2A version this binding speaks.
const ProtocolVersion = "1.0"

// JSON-RPC and A2A error codes.
const (
	codeParseError         = -32700
	codeInvalidRequest     = -32600
	codeMethodNotFound     = -32601
	codeInvalidParams      = -32602
	codeInternal           = -32603
	codeTaskNotFound       = -32001
	codeTaskNotCancelable  = -32002
	codeUnsupported        = -32004
	codeContentType        = -32005
	codeVersionUnsupported = -32009
)

// AgentCard is the card served at /.well-known/agent-card.json.
type AgentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	SupportedInterfaces  []AgentInterface          `json:"supportedInterfaces"`
	Provider             *AgentProvider            `json:"provider,omitempty"`
	Version              string                    `json:"version"`
	DocumentationURL     string                    `json:"documentationUrl,omitempty"`
	Capabilities         AgentCapabilities         `json:"capabilities"`
	SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes"`
	SecurityRequirements []SecurityRequirement     `json:"securityRequirements"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []AgentSkill              `json:"skills"`
}

type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

type AgentProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

type AgentCapabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
}

// SecurityScheme is one of the protocol's scheme kinds; switchboard
// publishes HTTP bearer and, with an external issuer, OpenID Connect.
type SecurityScheme struct {
	HTTPAuth *HTTPAuthSecurityScheme `json:"httpAuthSecurityScheme,omitempty"`
	OpenID   *OpenIDSecurityScheme   `json:"openIdConnectSecurityScheme,omitempty"`
}

type HTTPAuthSecurityScheme struct {
	Description string `json:"description,omitempty"`
	Scheme      string `json:"scheme"`
}

type OpenIDSecurityScheme struct {
	Description      string `json:"description,omitempty"`
	OpenIDConnectURL string `json:"openIdConnectUrl"`
}

// SecurityRequirement names the schemes a request may satisfy.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

type StringList struct {
	List []string `json:"list"`
}

type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

// Message is one message of a conversation.
type Message struct {
	MessageID string          `json:"messageId"`
	ContextID string          `json:"contextId,omitempty"`
	TaskID    string          `json:"taskId,omitempty"`
	Role      string          `json:"role"`
	Parts     []Part          `json:"parts"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// Part is one piece of content: text, data, or a file (raw bytes or a
// URL), which this binding does not take.
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Raw       *string         `json:"raw,omitempty"`
	URL       *string         `json:"url,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

func textPart(s string) Part { return Part{Text: &s} }

type Task struct {
	ID        string          `json:"id"`
	ContextID string          `json:"contextId"`
	Status    TaskStatus      `json:"status"`
	Artifacts []Artifact      `json:"artifacts,omitempty"`
	History   []Message       `json:"history,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

type TaskStatus struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

type Artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name,omitempty"`
	Parts      []Part `json:"parts"`
}

// StreamResponse is one event of a stream: exactly one member is set.
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}

type TaskStatusUpdateEvent struct {
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
}

type TaskArtifactUpdateEvent struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	LastChunk bool     `json:"lastChunk"`
}

// sendParams is SendMessage's and SendStreamingMessage's params.
type sendParams struct {
	Message       *Message `json:"message"`
	Configuration *struct {
		ReturnImmediately bool `json:"returnImmediately"`
		HistoryLength     *int `json:"historyLength"`
	} `json:"configuration"`
	// Metadata may carry switchboard's own request: the envelope and
	// projects of the task (narrowed to the caller's rights as always).
	Metadata *struct {
		Envelope *switchboard.TaskEnvelope `json:"envelope"`
		Projects []string                  `json:"projects"`
	} `json:"metadata"`
}

// idParams is GetTask's, CancelTask's and SubscribeToTask's params.
type idParams struct {
	ID string `json:"id"`
}

type listParams struct {
	ContextID string `json:"contextId"`
	Status    string `json:"status"`
	PageSize  int    `json:"pageSize"`
}

var states = map[switchboard.TaskStatus]string{
	switchboard.TaskSubmitted:     "TASK_STATE_SUBMITTED",
	switchboard.TaskWorking:       "TASK_STATE_WORKING",
	switchboard.TaskInputRequired: "TASK_STATE_INPUT_REQUIRED",
	switchboard.TaskCompleted:     "TASK_STATE_COMPLETED",
	switchboard.TaskFailed:        "TASK_STATE_FAILED",
	switchboard.TaskCancelled:     "TASK_STATE_CANCELED",
}

// toWire is the A2A form of a task: its goal as the history's user
// message, a status message for why it waits, failed or was cancelled,
// its artifacts as text parts, and switchboard's record (envelope,
// steps, usage) in the metadata.
func toWire(t switchboard.Task) Task {
	ctxID := t.Context
	if ctxID == "" {
		ctxID = t.ID
	}
	w := Task{ID: t.ID, ContextID: ctxID,
		Status:  TaskStatus{State: states[t.Status], Timestamp: t.UpdatedAt.UTC().Format(time.RFC3339Nano)},
		History: []Message{{MessageID: t.ID + "-goal", ContextID: ctxID, TaskID: t.ID, Role: "ROLE_USER", Parts: []Part{textPart(t.Goal)}}},
	}
	var why string
	switch {
	case t.Error != nil:
		why = string(t.Error.Code) + ": " + t.Error.Message
	case t.Status == switchboard.TaskInputRequired:
		why = "a call waits for its owner's approval in switchboard (" + t.Owner + ")"
	}
	if why != "" {
		w.Status.Message = &Message{MessageID: t.ID + "-status-" + itoa(t.Revision), ContextID: ctxID, TaskID: t.ID, Role: "ROLE_AGENT", Parts: []Part{textPart(why)}}
	}
	for _, a := range t.Artifacts {
		w.Artifacts = append(w.Artifacts, Artifact{ArtifactID: a.ID, Name: a.Name, Parts: []Part{textPart(a.Text)}})
	}
	meta, _ := json.Marshal(map[string]any{"switchboard": map[string]any{
		"status": t.Status, "owner": t.Owner, "envelope": t.Envelope, "narrowed": t.Narrowed, "usage": t.Usage, "steps": t.Steps}})
	w.Metadata = meta
	return w
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
