// Package aisdk is the AI SDK encoding of switchboard's run events: the UI
// Message Stream that the `ai` package's useChat reads (its chunk types,
// response headers and `[DONE]` terminator) and the request body its
// DefaultChatTransport POSTs (ChatRequest with its UIMessages).
//
// A run's events are AG-UI events (package agui); UIStream translates them
// into chunks as they arrive, and FromUIMessages turns the client's history
// into the AG-UI messages the agent loop takes. The AI SDK client owns the
// history, so the translation keeps only the little state one stream needs.
// The package knows nothing of the agent loop, the broker or HTTP routing.
package aisdk
