package switchboard

import "time"

// The assistant's wire records. The agent runtime produces them, httpapi
// encodes them and the typed client decodes them; they live here so that a
// client of the HTTP API needs nothing of the runtime (its broker, registry
// and model SDKs) to read them.

// RunStatus is a run's lifecycle state.
type RunStatus string

const (
	RunRunning   RunStatus = "running"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
	// RunWaiting: the run finished leaving frontend tool calls (or, with
	// approvals, interrupts) for the client to answer in a next run.
	RunWaiting RunStatus = "waiting"
)

// RunInfo is a run's public record (GET /runs/{id}).
type RunInfo struct {
	RunID    string `json:"runId"`
	ThreadID string `json:"threadId"`
	// User is whom the run acts for ("user:<id>"): the user of the tab
	// that started it, the operator for a run the admin token started.
	// The acting agent is the built-in assistant.
	User       string    `json:"user,omitempty"`
	SessionID  string    `json:"sessionId,omitempty"`
	Status     RunStatus `json:"status"`
	Harness    string    `json:"harness"`
	Model      *RunModel `json:"model,omitempty"`
	Steps      int       `json:"steps"`
	Usage      RunUsage  `json:"usage"`
	Cost       *float64  `json:"cost,omitempty"`
	Events     int       `json:"events"`
	Queued     int       `json:"queuedFollowUps"`
	Error      *Error    `json:"error,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// RunModel names the model a run is bound to.
type RunModel struct {
	Alias    string `json:"alias"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// RunUsage is a run's token accounting.
type RunUsage struct {
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	TotalTokens       int64 `json:"totalTokens"`
	CachedInputTokens int64 `json:"cachedInputTokens,omitempty"`
}

// Harness is the runtime binding of a chat session: who runs its turns and
// therefore what the chat surface may do (GET /agent/capabilities).
type Harness struct {
	Name string `json:"harness"`
	// NativeFollowUp: a message sent while a run is busy is queued and
	// consumed at the next step boundary.
	NativeFollowUp bool `json:"nativeFollowUp"`
	// AISDKOwnsHistory: the AI SDK client keeps the messages and PUTs them;
	// the runtime does not save its own.
	AISDKOwnsHistory bool `json:"aiSdkOwnsHistory"`
}

// FollowUp is a message sent while the chat may be busy (POST
// /agent/chat/{sessionId}/followup). The same (ClientSeq, ClientNonce) sent
// again answers as the first time did; the same ClientSeq with another
// nonce is FOLLOWUP_SEQUENCE_CONFLICT.
type FollowUp struct {
	Text        string `json:"text"`
	ClientSeq   int64  `json:"clientSeq"`
	ClientNonce string `json:"clientNonce"`
}

// FollowUpResult says what happened to a follow-up.
type FollowUpResult struct {
	// Status is "queued" (consumed at the busy run's next step boundary) or
	// "started" (the chat was idle: a new run answers it).
	Status    string `json:"status"`
	RunID     string `json:"runId"`
	ClientSeq int64  `json:"clientSeq"`
	// Replayed is true when this exact follow-up was already accepted.
	Replayed bool `json:"replayed,omitempty"`
}

// RunRecord is a run as the store keeps it, so that any replica can answer
// GET /runs/{id} and its event stream (issue 16): the public record, who
// started it, and the replica running it — the only one that writes it,
// until a survivor ends it (Store.RunFailInFlight).
type RunRecord struct {
	RunInfo
	// Owner is who started the run: "" for the admin, "session:ID" for a
	// tab (the run routes' visibility check).
	Owner string `json:"-"`
	// Replica is the replica that runs it (switchboard.Replica).
	Replica string `json:"-"`
	// Waiting are the approval ids the calls of a run that ended
	// interrupted wait on.
	Waiting []string `json:"-"`
}

// RunEvent is one stored event of a run's AG-UI stream: its position
// (the SSE id a follower resumes after with Last-Event-ID) and its JSON.
type RunEvent struct {
	Seq  int
	JSON []byte
}

// RunFilter selects stored runs (Store.RunList), newest first.
type RunFilter struct {
	// ThreadID, if set, keeps the runs of that chat session.
	ThreadID string
	// Status, if set, keeps the runs in that status (RunRunning: the run
	// a chat has in progress on whichever replica holds it).
	Status RunStatus
	// User, if set, keeps the runs acting for that user ("user:<id>").
	User string
	// Limit bounds the answer; 0 means 100.
	Limit int
}
