// Package sse is the one Server-Sent Events framing of the daemon's
// streams (a run's AG-UI and AI SDK events, a tab's dispatched actions, the
// activity ledger's live tail) and of the typed client that reads them.
//
// The writer side is AppendEvent and AppendComment, which render frames
// byte for byte as the streams have always been rendered (an id line when
// the event has an id, an event line when it has a type, one data line per
// line of data, a blank line), and Writer, which an HTTP handler streams
// through: it sets the stream's headers, buffers frames, writes each batch
// under a deadline so a reader that stops reading is dropped, flushes, and
// can be expired from another goroutine when the stream must end now.
//
// The reader side is Reader, which parses a stream as the WHATWG
// EventSource does (id, event, data and retry fields, comments, a BOM) with
// a bound on the size of one frame, and remembers the last event id for a
// Last-Event-ID reconnect.
package sse
