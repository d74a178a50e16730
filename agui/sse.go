package agui

import (
	"errors"
	"io"

	"github.com/switchboardhq/switchboard/internal/sse"
)

// ContentType is the media type of both encodings' streams (AG-UI's and
// the AI SDK's).
const ContentType = sse.ContentType

// AppendFrame appends one SSE frame carrying data (a JSON document, so one
// line) and, when id is set, an id line for Last-Event-ID resume.
func AppendFrame(dst []byte, id string, data []byte) []byte {
	return sse.AppendEvent(dst, sse.Event{ID: id, Data: data})
}

// WriteEvent writes ev as one SSE frame.
func WriteEvent(w io.Writer, id string, ev Event) error {
	b, err := Marshal(ev)
	if err != nil {
		return err
	}
	_, err = w.Write(AppendFrame(nil, id, b))
	return err
}

// ReadFrames splits an SSE stream into the data of its frames (multi-line
// data joined with newlines), calling fn for each with the frame's id.
// Comments and other fields are skipped; a frame cut off by the end of the
// stream is dropped. It stops at the first error fn returns, and returns
// nil at the end of the stream.
func ReadFrames(r io.Reader, fn func(id string, data []byte) error) error {
	sr := sse.NewReader(r)
	for {
		ev, err := sr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(ev.ID, ev.Data); err != nil {
			return err
		}
	}
}
