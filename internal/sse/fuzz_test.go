package sse

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// FuzzReader: any byte stream parses without panicking or running away;
// the last event id is one a returned event carried; and what the reader
// returns, written again with AppendEvent, reads back the same.
func FuzzReader(f *testing.F) {
	f.Add("id: 1\nevent: x\ndata: {}\n\n")
	f.Add(": c\n\ndata:\n\n\n\nid:\n")
	f.Add("data: a\rdata: b\r\n\n")
	f.Add("\uFEFFretry: 100\ndata: x\ndata: y\n\nid: a\x00b\ndata: z\n\n")
	f.Add("event: only\nid: 7\n\ndata")
	f.Fuzz(func(t *testing.T, in string) {
		r := newReaderSize(strings.NewReader(in), 16)
		ids := map[string]bool{"": true}
		var evs []Event
		for range 10000 {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if ev.ID != "" {
				ids[ev.ID] = true
			}
			evs = append(evs, ev)
		}
		if !ids[r.LastEventID()] {
			t.Fatalf("last event id %q came from no returned event", r.LastEventID())
		}
		if strings.ContainsRune(in, '\r') {
			return // a CR before LF is trimmed on read, so it cannot round-trip
		}
		var out []byte
		for _, ev := range evs {
			out = AppendEvent(out, ev)
		}
		again := NewReader(bytes.NewReader(out))
		for i, want := range evs {
			got, err := again.Next()
			if err != nil {
				t.Fatalf("event %d of %q: %v", i, out, err)
			}
			if got.ID != want.ID || got.Event != want.Event || !bytes.Equal(got.Data, want.Data) || got.Retry != want.Retry {
				t.Fatalf("event %d: wrote %+v, read %+v", i, want, got)
			}
		}
		if _, err := again.Next(); err != io.EOF {
			t.Fatalf("after the events: %v, want EOF", err)
		}
	})
}
