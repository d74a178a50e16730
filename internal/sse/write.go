package sse

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ContentType is the media type of an event stream.
const ContentType = "text/event-stream"

// Event is one frame of a stream.
type Event struct {
	// ID is the frame's id, which a client sends back as Last-Event-ID to
	// resume; empty writes no id line.
	ID string
	// Event is the event type; empty writes no event line (EventSource
	// calls such an event "message").
	Event string
	// Data is the payload, usually one JSON document. Each of its lines
	// becomes one data line, so it arrives as written.
	Data []byte
	// Retry asks the client to wait this long before reconnecting; zero
	// writes no retry line. Reader reports it when a frame carries one.
	Retry time.Duration
}

// AppendEvent appends ev as one frame: "id: ", "event: " and "retry: "
// lines when set, a "data: " line for each line of Data (at least one),
// and the blank line that ends the frame.
func AppendEvent(dst []byte, ev Event) []byte {
	if ev.ID != "" {
		dst = append(dst, "id: "...)
		dst = append(dst, ev.ID...)
		dst = append(dst, '\n')
	}
	if ev.Event != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, ev.Event...)
		dst = append(dst, '\n')
	}
	if ev.Retry > 0 {
		dst = append(dst, "retry: "...)
		dst = strconv.AppendInt(dst, ev.Retry.Milliseconds(), 10)
		dst = append(dst, '\n')
	}
	for line := range bytes.SplitSeq(ev.Data, []byte("\n")) {
		dst = append(dst, "data: "...)
		dst = append(dst, line...)
		dst = append(dst, '\n')
	}
	return append(dst, '\n')
}

// AppendComment appends a comment frame (": text"), which readers skip; a
// stream sends them to keep idle connections open. Each line of text
// becomes one comment line.
func AppendComment(dst []byte, text string) []byte {
	for line := range strings.SplitSeq(text, "\n") {
		dst = append(dst, ": "...)
		dst = append(dst, line...)
		dst = append(dst, '\n')
	}
	return append(dst, '\n')
}

// Heartbeat is the comment streams send while idle.
const Heartbeat = "heartbeat"

// Writer streams frames to an HTTP response. Frames are buffered until
// Flush, which writes them under a deadline (a reader that stops reading
// fails the write rather than holding the handler) and flushes them to the
// client. Safe for concurrent use: a keep-alive goroutine may send
// comments while the handler sends events, and Expire may be called from
// anywhere.
type Writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration

	mu  sync.Mutex // guards buf and serializes writes
	buf []byte

	dmu     sync.Mutex // guards the deadline; never held during a write
	expired bool
}

// Start begins an event stream on w: it sets Content-Type, Cache-Control
// (no-cache unless the handler has set one) and X-Accel-Buffering (so a
// proxy does not hold frames back), sends the 200 with the headers at once,
// and returns a Writer whose every write must finish within timeout (zero:
// no deadline).
func Start(w http.ResponseWriter, timeout time.Duration) *Writer {
	h := w.Header()
	h.Set("Content-Type", ContentType)
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sw := &Writer{w: w, rc: http.NewResponseController(w), timeout: timeout}
	_ = sw.rc.Flush()
	return sw
}

// Event buffers one frame.
func (sw *Writer) Event(ev Event) {
	sw.mu.Lock()
	sw.buf = AppendEvent(sw.buf, ev)
	sw.mu.Unlock()
}

// Comment buffers a comment frame.
func (sw *Writer) Comment(text string) {
	sw.mu.Lock()
	sw.buf = AppendComment(sw.buf, text)
	sw.mu.Unlock()
}

// Append buffers frames already rendered (by AppendEvent or an encoding's
// own append helper).
func (sw *Writer) Append(frames []byte) {
	sw.mu.Lock()
	sw.buf = append(sw.buf, frames...)
	sw.mu.Unlock()
}

// Flush writes what is buffered and flushes it to the client. With nothing
// buffered it does nothing. An error means the stream is broken (the
// client left, stopped reading, or the Writer expired); the handler should
// return.
func (sw *Writer) Flush() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if len(sw.buf) == 0 {
		return nil
	}
	if err := sw.arm(); err != nil {
		return err
	}
	_, err := sw.w.Write(sw.buf)
	sw.buf = sw.buf[:0]
	if err != nil {
		return err
	}
	return sw.rc.Flush()
}

// arm sets the next write's deadline, unless the Writer has expired.
func (sw *Writer) arm() error {
	sw.dmu.Lock()
	defer sw.dmu.Unlock()
	if sw.expired {
		return errExpired
	}
	if sw.timeout > 0 {
		_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
	}
	return nil
}

// Expire ends the stream from another goroutine: a write blocked on a
// reader that stopped reading fails now, and every later Flush fails. When
// Expire returns, it no longer touches the connection.
func (sw *Writer) Expire() {
	sw.dmu.Lock()
	defer sw.dmu.Unlock()
	sw.expired = true
	_ = sw.rc.SetWriteDeadline(time.Unix(1, 0))
}

// errExpired is Flush's error once the Writer has expired.
var errExpired = errors.New("sse: stream expired")
