package switchboard

import (
	"encoding/json"
	"time"
)

// ChatHistory is the persisted message history of one chat session (the
// agent loop's conversation, or what an AI SDK client PUTs when it owns the
// history). Messages is a JSON array kept as given; the agent package
// decides its shape and strips large data: URLs before saving. Owner is set
// when the history is first written and never changes; Revision grows with
// every write.
type ChatHistory struct {
	SessionID string          `json:"sessionId"`
	Owner     string          `json:"owner,omitempty"`
	Messages  json.RawMessage `json:"messages"`
	Revision  int64           `json:"revision"`
	UpdatedAt time.Time       `json:"updatedAt"`
}
