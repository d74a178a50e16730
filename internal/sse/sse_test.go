package sse

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The frames the daemon's streams have always sent, byte for byte: the
// browser SDK, the AG-UI and AI SDK clients and the e2e tests read them.
func TestAppendEventWire(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"run event with position", AppendEvent(nil, Event{ID: "3", Data: []byte(`{"type":"RUN_STARTED"}`)}), "id: 3\ndata: {\"type\":\"RUN_STARTED\"}\n\n"},
		{"AG-UI event without id", AppendEvent(nil, Event{Data: []byte(`{}`)}), "data: {}\n\n"},
		{"tab event", AppendEvent(nil, Event{ID: "e-1", Event: "browser.action.request", Data: []byte(`{"a":1}`)}), "id: e-1\nevent: browser.action.request\ndata: {\"a\":1}\n\n"},
		{"tab hello", AppendEvent(nil, Event{Event: "session.ready", Data: []byte(`{}`)}), "event: session.ready\ndata: {}\n\n"},
		{"ledger entry", AppendEvent(nil, Event{ID: "42", Event: "activity", Data: []byte(`{"id":42}`)}), "id: 42\nevent: activity\ndata: {\"id\":42}\n\n"},
		{"UI stream end", AppendEvent(nil, Event{Data: []byte("[DONE]")}), "data: [DONE]\n\n"},
		{"multi-line data", AppendEvent(nil, Event{Data: []byte("a\nb")}), "data: a\ndata: b\n\n"},
		{"empty data", AppendEvent(nil, Event{Event: "x"}), "event: x\ndata: \n\n"},
		{"retry", AppendEvent(nil, Event{Retry: 2500 * time.Millisecond, Data: []byte("r")}), "retry: 2500\ndata: r\n\n"},
		{"heartbeat", AppendComment(nil, Heartbeat), ": heartbeat\n\n"},
		{"multi-line comment", AppendComment(nil, "a\nb"), ": a\n: b\n\n"},
	}
	for _, c := range cases {
		if string(c.got) != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestReaderFrames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100) // longer than the 16-byte buffer below
	in := "\uFEFFevent: session.ready\ndata: {\"a\":1}\n\n" +
		": heartbeat\n\n" +
		"id: e-1\r\nevent: browser.action.request\r\ndata: {\"b\":\r\ndata: \"" + long + "\"}\r\n\r\n" +
		"\n\n" + // blank lines between frames dispatch nothing
		"id: e-2\nevent: browser.action.cancel\ndata:{}\nretry: 1500\nunknown: field\n\n" +
		"id: only-an-id\n\n" + // no data: not an event
		"data\n\n" + // a field name alone has an empty value
		"retry: soon\ndata: x\n\n" + // a retry that is not digits is ignored
		"id: e-3\nevent: partial\ndata: cut off"
	want := []Event{
		{Event: "session.ready", Data: []byte(`{"a":1}`)},
		{ID: "e-1", Event: "browser.action.request", Data: []byte("{\"b\":\n\"" + long + "\"}")},
		{ID: "e-2", Event: "browser.action.cancel", Data: []byte(`{}`), Retry: 1500 * time.Millisecond},
		{Data: []byte{}},
		{Data: []byte("x")},
	}
	for _, src := range []struct {
		name string
		r    io.Reader
	}{
		{"whole", strings.NewReader(in)},
		{"one byte at a time", iotest.OneByteReader(strings.NewReader(in))},
	} {
		r := newReaderSize(src.r, 16)
		var got []Event
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", src.name, err)
			}
			got = append(got, ev)
		}
		if d := cmp.Diff(want, got, cmp.Comparer(func(a, b []byte) bool { return bytes.Equal(a, b) })); d != "" {
			t.Errorf("%s: events (-want +got):\n%s", src.name, d)
		}
		if r.LastEventID() != "e-2" || r.Comments() != 1 || r.Retry() != 1500*time.Millisecond {
			t.Errorf("%s: last id %q, comments %d, retry %v", src.name, r.LastEventID(), r.Comments(), r.Retry())
		}
	}
}

func TestReaderBoundsAFrame(t *testing.T) {
	t.Parallel()
	huge := "data: " + strings.Repeat("x", MaxFrame) + "\n\n"
	if _, err := NewReader(strings.NewReader(huge)).Next(); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("one huge line: %v, want ErrFrameTooLarge", err)
	}
	many := strings.Repeat("data: "+strings.Repeat("y", 1<<20)+"\n", 17) + "\n"
	if _, err := NewReader(strings.NewReader(many)).Next(); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("many lines: %v, want ErrFrameTooLarge", err)
	}
	fine := "data: " + strings.Repeat("z", 1<<20) + "\n\n"
	if ev, err := NewReader(strings.NewReader(fine)).Next(); err != nil || len(ev.Data) != 1<<20 {
		t.Errorf("a 1 MiB frame: %d bytes, %v", len(ev.Data), err)
	}
}

func TestReaderPassesReadErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)))
	if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first frame: %q %v", ev.Data, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("after the read error: %v, want boom", err)
	}
}

func TestWriter(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	rec.Header().Set("Cache-Control", "no-store")
	sw := Start(rec, time.Second)
	if !rec.Flushed || rec.Code != http.StatusOK {
		t.Fatalf("Start: code %d, flushed %v", rec.Code, rec.Flushed)
	}
	h := rec.Header()
	if h.Get("Content-Type") != ContentType || h.Get("Cache-Control") != "no-store" || h.Get("X-Accel-Buffering") != "no" {
		t.Errorf("headers %v", h)
	}
	if err := sw.Flush(); err != nil || rec.Body.Len() != 0 {
		t.Fatalf("an empty flush wrote %q (%v)", rec.Body, err)
	}
	sw.Event(Event{ID: "1", Event: "activity", Data: []byte(`{}`)})
	sw.Comment(Heartbeat)
	sw.Append(AppendEvent(nil, Event{Data: []byte("[DONE]")}))
	if rec.Body.Len() != 0 {
		t.Fatal("frames were written before Flush")
	}
	if err := sw.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.Body.String(), "id: 1\nevent: activity\ndata: {}\n\n: heartbeat\n\ndata: [DONE]\n\n"; got != want {
		t.Errorf("body %q, want %q", got, want)
	}
	sw.Expire()
	sw.Comment(Heartbeat)
	if err := sw.Flush(); err == nil {
		t.Error("Flush after Expire succeeded")
	}
	def := httptest.NewRecorder()
	Start(def, 0)
	if got := def.Header().Get("Cache-Control"); got != "no-cache" {
		t.Errorf("default Cache-Control %q", got)
	}
}

// A reader that stops reading fails the write at its deadline, and Expire
// fails a write that is blocked now.
func TestWriterDropsAStalledReader(t *testing.T) {
	t.Parallel()
	for _, expire := range []bool{false, true} {
		started := make(chan *Writer, 1)
		done := make(chan error, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			timeout := 50 * time.Millisecond
			if expire {
				timeout = time.Hour
			}
			sw := Start(w, timeout)
			started <- sw
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for {
				sw.Event(Event{Data: chunk})
				if err := sw.Flush(); err != nil {
					done <- err
					return
				}
			}
		}))
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		sw := <-started // the client reads nothing more: the socket fills up
		if expire {
			sw.Expire()
		}
		if err := <-done; err == nil {
			t.Errorf("expire=%v: the stalled stream's write did not fail", expire)
		}
		resp.Body.Close()
		srv.Close()
	}
}
