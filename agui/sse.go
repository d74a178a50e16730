package agui

import (
	"bufio"
	"bytes"
	"io"
)

// ContentType is the media type of both encodings' streams.
const ContentType = "text/event-stream"

// maxFrameLine bounds one SSE line ReadFrames accepts (a large tool result
// is one line of JSON).
const maxFrameLine = 16 << 20

// AppendFrame appends one SSE frame carrying data (a JSON document, so one
// line) and, when id is set, an id line for Last-Event-ID resume.
func AppendFrame(dst []byte, id string, data []byte) []byte {
	if id != "" {
		dst = append(dst, "id: "...)
		dst = append(dst, id...)
		dst = append(dst, '\n')
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		dst = append(dst, "data: "...)
		dst = append(dst, line...)
		dst = append(dst, '\n')
	}
	return append(dst, '\n')
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
// Comments and other fields are skipped. It stops at the first error fn
// returns.
func ReadFrames(r io.Reader, fn func(id string, data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxFrameLine)
	var (
		id   string
		data []byte
		has  bool
	)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if has {
				if err := fn(id, data); err != nil {
					return err
				}
			}
			id, data, has = "", nil, false
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
			id = string(value)
		}
	}
	if has {
		if err := fn(id, data); err != nil {
			return err
		}
	}
	return sc.Err()
}
