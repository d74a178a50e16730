// Package agui holds the two wire encodings of switchboard's run events:
//
//   - AG-UI 1.0 (the protocol of @ag-ui/core and CopilotKit): the event
//     types with their exact JSON field names (Event and its
//     implementations), the SSE framing, RunAgentInput, and Checker, which
//     enforces the lifecycle rules the reference client enforces;
//   - the AI SDK UI Message Stream (the `ai` package's useChat): the chunk
//     types, the headers, the `[DONE]` terminator, and the
//     DefaultChatTransport request body with its UIMessages.
//
// A run produces one stream of AG-UI events (the agent package emits them);
// AG-UI clients get that stream as it is, and UIStream translates the same
// events into UI Message Stream chunks for AI SDK clients, so there is one
// call path and transports only translate. The package knows nothing of the
// agent loop, the broker or HTTP routing.
package agui
