package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// MaxFrame bounds the bytes one frame may carry (a large tool result is one
// line of JSON); a longer frame fails Next with ErrFrameTooLarge.
const MaxFrame = 16 << 20

// ErrFrameTooLarge is Next's error for a frame larger than MaxFrame.
var ErrFrameTooLarge = fmt.Errorf("sse: frame larger than %d bytes", MaxFrame)

// readBuffer is the Reader's buffer size; longer lines are gathered.
const readBuffer = 64 << 10

// Reader parses an event stream. Lines end in LF or CRLF. A frame is
// dispatched at its blank line when it has at least one data field; a
// frame cut off by the end of the stream is dropped, as EventSource does.
// Comments are counted, not returned. Not safe for concurrent use.
type Reader struct {
	r        *bufio.Reader
	started  bool // the optional BOM has been looked for
	last     string
	retry    time.Duration
	comments int
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader { return newReaderSize(r, readBuffer) }

func newReaderSize(r io.Reader, size int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, size)}
}

// Next returns the next event; io.EOF when the stream ended, or the
// underlying reader's error. An event's ID is the id field of its own
// frame (empty when it had none); its Retry is set when its frame carried
// a retry field.
func (r *Reader) Next() (Event, error) {
	var (
		ev    Event
		data  []byte
		has   bool // a data field was seen
		size  int
		retry time.Duration
	)
	for {
		line, err := r.line()
		if err != nil {
			return Event{}, err
		}
		if size += len(line); size > MaxFrame {
			return Event{}, ErrFrameTooLarge
		}
		if len(line) == 0 {
			if !has {
				ev, data, size, retry = Event{}, nil, 0, 0 // nothing to dispatch; start clean
				continue
			}
			ev.Data, ev.Retry = data, retry
			if ev.ID != "" {
				r.last = ev.ID
			}
			return ev, nil
		}
		if line[0] == ':' {
			r.comments++
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if has {
				data = append(data, '\n')
			}
			data = append(data, value...)
			has = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 { // EventSource ignores an id with NUL
				ev.ID = string(value)
			}
		case "event":
			ev.Event = string(value)
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil { // digits only, as EventSource wants
				retry = time.Duration(ms) * time.Millisecond
				r.retry = retry
			}
		}
	}
}

// line reads one line without its LF or CRLF. The returned slice is valid
// until the next call.
func (r *Reader) line() ([]byte, error) {
	line, err := r.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A long line: keep what was read (the buffer is about to be
		// reused) and gather the rest of it, within the frame bound.
		long := bytes.Clone(line)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(long) > MaxFrame {
				return nil, ErrFrameTooLarge
			}
			line, err = r.r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF // a cut-off line belongs to a frame that never ends
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if !r.started {
		r.started = true
		line = bytes.TrimPrefix(line, []byte("\uFEFF"))
	}
	return line, nil
}

// LastEventID is the id of the last event returned that had one, for a
// Last-Event-ID reconnect.
func (r *Reader) LastEventID() string { return r.last }

// Retry is the reconnection delay the stream last asked for (zero: none).
func (r *Reader) Retry() time.Duration { return r.retry }

// Comments counts the comment lines read so far (keep-alives).
func (r *Reader) Comments() int { return r.comments }
