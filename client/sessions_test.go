package client

import (
	"io"
	"strings"
	"testing"
)

func stream(s string) *EventStream {
	return newEventStream(io.NopCloser(strings.NewReader(s)), func() {}, "")
}

func TestEventStreamFrames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100<<10) // longer than the reader's buffer
	s := stream("event: session.ready\ndata: {\"a\":1}\n\n" +
		": heartbeat\n\n" +
		"id: e-1\r\nevent: browser.action.request\r\ndata: {\"b\":\r\ndata: \"" + long + "\"}\r\n\r\n" +
		"id: e-2\nevent: browser.action.cancel\ndata:{}\n\n" +
		"id: e-3\nevent: partial\n")
	want := []StreamEvent{
		{Kind: "session.ready", Data: []byte(`{"a":1}`)},
		{ID: "e-1", Kind: "browser.action.request", Data: []byte("{\"b\":\n\"" + long + "\"}")},
		{ID: "e-2", Kind: "browser.action.cancel", Data: []byte(`{}`)},
	}
	for i, w := range want {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if ev.ID != w.ID || ev.Kind != w.Kind || string(ev.Data) != string(w.Data) {
			t.Fatalf("frame %d: %+v (%s), want %+v (%s)", i, ev, ev.Data, w, w.Data)
		}
	}
	if _, err := s.Next(); err != io.EOF {
		t.Fatalf("a frame cut off by the end of the stream: %v, want EOF", err)
	}
	if s.LastEventID() != "e-2" || s.Heartbeats() != 1 {
		t.Fatalf("last id %q, heartbeats %d", s.LastEventID(), s.Heartbeats())
	}
}

// FuzzEventStream: any byte stream parses without panicking, and the last
// event id is always one that a complete frame carried.
func FuzzEventStream(f *testing.F) {
	f.Add("id: 1\nevent: x\ndata: {}\n\n")
	f.Add(": c\n\ndata:\n\n\n\nid:\n")
	f.Add("data: a\rdata: b\r\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		s := stream(in)
		ids := map[string]bool{"": true}
		for range 10000 {
			ev, err := s.Next()
			if err != nil {
				break
			}
			if ev.ID != "" {
				ids[ev.ID] = true
			}
		}
		if !ids[s.LastEventID()] {
			t.Fatalf("last event id %q came from no complete frame", s.LastEventID())
		}
	})
}
