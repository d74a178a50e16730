// Package agui is the AG-UI 1.0 encoding of switchboard's run events (the
// protocol of @ag-ui/core and CopilotKit): the event types with their exact
// JSON field names (Event and its implementations), the SSE framing,
// RunAgentInput, and Checker, which enforces the lifecycle rules the
// reference client enforces.
//
// A run produces one stream of AG-UI events (the agent package emits them).
// AG-UI clients get that stream as it is; package aisdk translates the same
// events into the AI SDK UI Message Stream, so there is one call path and
// transports only translate. The package knows nothing of the agent loop,
// the broker or HTTP routing.
package agui
