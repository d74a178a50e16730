package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// bridgeFloor is the three-exchange floor of a browser action, built bare
// in the same run as the daemon's real path: the least any design that
// runs the action in a tab reached over SSE must do, with nothing of
// switchboard in it.
//
//  1. the caller POSTs /call; the handler parks the call under a new id
//     and queues a request event;
//  2. the tab's GET /events stream writes the queued events (as many as
//     have accumulated, one flush) and the Go tab reads them; it decodes
//     each event's JSON and answers from a goroutine, as client.Tab.Serve
//     and the browser SDK do;
//  3. the tab POSTs the result to /result/{id}; that handler hands it to
//     the parked call, whose handler writes it as the answer to step 1.
//
// No store, no auth, no validation, no ids beyond a counter: the floor
// under the daemon's browser round trip, as one bare POST is the floor
// under an api call.
type bridgeFloor struct {
	srv    *httptest.Server
	hc     *http.Client
	nextID atomic.Uint64

	mu      sync.Mutex
	queue   [][]byte
	wake    chan struct{} // buffered 1: "the queue has something"
	pending map[string]chan []byte
}

func newBridgeFloor(tb testing.TB) *bridgeFloor {
	tb.Helper()
	f := &bridgeFloor{wake: make(chan struct{}, 1), pending: map[string]chan []byte{}, hc: bridgeHTTPClient()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /call", f.handleCall)
	mux.HandleFunc("GET /events", f.handleEvents)
	mux.HandleFunc("POST /result/{id}", f.handleResult)
	f.srv = httptest.NewServer(mux)
	ctx, cancel := context.WithCancel(context.Background())
	connected := make(chan error, 1)
	done := make(chan struct{})
	go func() { defer close(done); f.tab(ctx, connected) }()
	if err := <-connected; err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cancel()
		f.srv.CloseClientConnections()
		<-done
		f.srv.Close()
		f.hc.CloseIdleConnections()
	})
	return f
}

func (f *bridgeFloor) handleCall(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := strconv.FormatUint(f.nextID.Add(1), 10)
	ev, _ := json.Marshal(struct {
		ID    string          `json:"invocationId"`
		Input json.RawMessage `json:"input"`
	}{id, body.Input})
	ch := make(chan []byte, 1)
	f.mu.Lock()
	f.pending[id] = ch
	f.queue = append(f.queue, ev)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
	select {
	case res := <-ch:
		w.Header().Set("Content-Type", "application/json")
		w.Write(res)
	case <-r.Context().Done():
		f.mu.Lock()
		delete(f.pending, id)
		f.mu.Unlock()
	}
}

func (f *bridgeFloor) handleEvents(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	var buf bytes.Buffer
	for {
		select {
		case <-f.wake:
		case <-r.Context().Done():
			return
		}
		f.mu.Lock()
		q := f.queue
		f.queue = nil
		f.mu.Unlock()
		buf.Reset()
		for _, ev := range q {
			buf.WriteString("event: request\ndata: ")
			buf.Write(ev)
			buf.WriteString("\n\n")
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		fl.Flush()
	}
}

func (f *bridgeFloor) handleResult(w http.ResponseWriter, r *http.Request) {
	res, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	f.mu.Lock()
	ch := f.pending[r.PathValue("id")]
	delete(f.pending, r.PathValue("id"))
	f.mu.Unlock()
	if ch == nil {
		http.Error(w, "no such call", http.StatusNotFound)
		return
	}
	ch <- res
	w.WriteHeader(http.StatusNoContent)
}

// tab is the Go tab: read the stream, answer each request from its own
// goroutine with the same acknowledgement the daemon bench's tab sends.
func (f *bridgeFloor) tab(ctx context.Context, connected chan<- error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := f.hc.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("events: %s", resp.Status)
	}
	connected <- err
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		var ev struct {
			ID    string `json:"invocationId"`
			Input struct{ Page string }
		}
		if json.Unmarshal(data, &ev) != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := []byte(`{"invocationId":"` + ev.ID + `","ok":true,"result":{"page":"` + ev.Input.Page + `","url":"/demo/` + ev.Input.Page + `","title":"Media library"}}`)
			req, _ := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, f.srv.URL+"/result/"+ev.ID, bytes.NewReader(res))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := f.hc.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
}

// call is one browser action through the floor, as the caller sees it.
func (f *bridgeFloor) call(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/call", bytes.NewReader([]byte(`{"input":{"page":"media","id":"media-7"}}`)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		OK     bool `json:"ok"`
		Result struct{ Page string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return err
	}
	if !out.OK || out.Result.Page != "media" {
		return fmt.Errorf("floor answered %+v", out)
	}
	return nil
}
