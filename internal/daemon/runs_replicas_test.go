package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/agui"
	agentrt "github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// TestRunCancelledOnAnotherReplica: a run streams on replica A; POST
// /runs/{id}/cancel through replica B reaches A (on A's own topic) and
// answers with the run cancelled.
func TestRunCancelledOnAnotherReplica(t *testing.T) {
	t.Parallel()
	hold, _ := heldGate(t)
	m := modeltest.NewOpenAI(t, modeltest.Turn{Text: "Working on it.", Hold: hold})
	_, urls := pgReplicasWith(t, 2, daemon.Options{Models: scripted(m)})
	a, b := urls[0], urls[1]
	body := `{"threadId":"chat-cancel","runId":"run-c1","messages":[{"id":"u-1","role":"user","content":"hi"}],"tools":[],"context":[]}`
	req, _ := http.NewRequest("POST", a+"/api/v1/agui", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer replica-token")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	awaitText(t, resp.Body, "A's run")
	creq, _ := http.NewRequest("POST", b+"/api/v1/runs/run-c1/cancel", nil)
	creq.Header.Set("Authorization", "Bearer replica-token")
	cresp, err := http.DefaultClient.Do(creq)
	if err != nil {
		t.Fatal(err)
	}
	defer cresp.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(cresp.Body).Decode(&got); err != nil || cresp.StatusCode != http.StatusOK || got["status"] != "cancelled" {
		t.Fatalf("cancel through B: %d %v %v", cresp.StatusCode, got, err)
	}
}

// runNotices wraps a replica's bus and counts what its subscriptions to
// run flush notices and interests are delivered, by run and topic.
type runNotices struct {
	bus.Bus
	mu  sync.Mutex
	got map[[2]string]int // {run id, topic} -> deliveries
}

func (c *runNotices) Subscribe(topic string, h bus.Handler) (func(), error) {
	return c.Bus.Subscribe(topic, func(p []byte) {
		if run, _, ok := strings.Cut(string(p), " "); ok && (strings.HasSuffix(topic, "runs.flushed") || strings.HasSuffix(topic, "runs.interest")) {
			c.mu.Lock()
			c.got[[2]string{run, topic}]++
			c.mu.Unlock()
		}
		h(p)
	})
}

// counts returns the deliveries about run, by topic.
func (c *runNotices) counts(run string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, n := range c.got {
		if k[0] == run {
			out[k[1]] += n
		}
	}
	return out
}

// TestRunFlushesReachOnlyItsFollowers: three replicas on one Postgres. A
// runs a run, B follows it (GET /runs/{id}/events), C follows nothing.
// B asks A for the run's flush notices and gets them on its own topic —
// with the store poll an hour apart, the notices alone bring B every
// event to the end — and C is delivered no notice of the run at all.
func TestRunFlushesReachOnlyItsFollowers(t *testing.T) {
	t.Parallel()
	hold, release := heldGate(t)
	m := modeltest.NewOpenAI(t, modeltest.Turn{Text: "Hello from replica A, streamed in small chunks.", ChunkSize: 4, Hold: hold})
	var seen []*runNotices
	ds, urls := pgReplicasWrapped(t, 3, daemon.Options{
		Models: scripted(m),
		Agent:  agentrt.Options{RunPollInterval: time.Hour}, // a follower moves on notices only
	}, func(_ int, b *bus.Postgres) bus.Bus {
		c := &runNotices{Bus: b, got: map[[2]string]int{}}
		seen = append(seen, c)
		return c
	})
	a, b := urls[0], urls[1]
	do := func(method, url, body, lastID string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer replica-token")
		req.Header.Set("Content-Type", "application/json")
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := do("POST", a+"/api/v1/runs", `{"threadId":"chat-notices","input":"say hello"}`, "")
	var started struct {
		RunID string `json:"runId"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&started); err != nil || resp.StatusCode != http.StatusCreated || started.RunID == "" {
		t.Fatalf("POST /runs on A: %d %+v %v", resp.StatusCode, started, err)
	}
	run := started.RunID
	// read follows the run on B until stop (or the stream's end); the
	// bound only turns a lost notice into a failure.
	read := func(lastID string, stop func(agui.Event) bool) (evs []agui.Event, last string) {
		t.Helper()
		done := make(chan error, 1)
		resp := do("GET", b+"/api/v1/runs/"+run+"/events", "", lastID)
		go func() {
			done <- agui.ReadFrames(resp.Body, func(id string, data []byte) error {
				ev, err := agui.Decode(data)
				if err != nil {
					return err
				}
				evs, last = append(evs, ev), id
				if stop != nil && stop(ev) {
					return io.EOF
				}
				return nil
			})
		}()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			resp.Body.Close()
			t.Fatal("B's follower stopped getting the run's events: no flush notice reached it")
		}
		return evs, last
	}
	first, last := read("", func(ev agui.Event) bool { _, ok := ev.(*agui.TextMessageContent); return ok })
	release()
	rest, _ := read(last, nil)
	evs := append(first, rest...)
	if err := agui.CheckAll(evs); err != nil {
		t.Fatalf("lifecycle of B's stream: %v", err)
	}
	if _, ok := evs[len(evs)-1].(*agui.RunFinished); !ok {
		t.Fatalf("B's stream ends with %T", evs[len(evs)-1])
	}

	// A sentinel on C's own topic, sent after the run's last flush: once C
	// has it, anything sent to C before it has arrived (one listening
	// connection, notifications in commit order).
	sentinel := bus.ReplicaTopic(ds[2].ReplicaID(), "sentinel")
	got := make(chan struct{}, 1)
	cancel, err := seen[2].Subscribe(sentinel, func([]byte) { got <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := seen[0].Publish(context.Background(), sentinel, []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the sentinel never reached C")
	}
	if n := seen[2].counts(run); len(n) != 0 {
		t.Errorf("C, which follows nothing, was delivered notices of the run: %v", n)
	}
	toB := bus.ReplicaTopic(ds[1].ReplicaID(), "runs.flushed")
	if n := seen[1].counts(run); n[toB] == 0 || len(n) != 1 {
		t.Errorf("B's deliveries about the run: %v; want flush notices on its own %s only", n, toB)
	}
	toA := bus.ReplicaTopic(ds[0].ReplicaID(), "runs.interest")
	if n := seen[0].counts(run); n[toA] == 0 || len(n) != 1 {
		t.Errorf("A's deliveries about the run: %v; want B's interest on its own %s only", n, toA)
	}
}

// TestRunIdWithSpacesReachesItsFollower: a client names its run (AG-UI's
// runId is the client's) with spaces in it; B, following it with the
// store poll an hour apart, still gets every event to the end: the
// interest and the flush notices name the run whole.
func TestRunIdWithSpacesReachesItsFollower(t *testing.T) {
	t.Parallel()
	hold, release := heldGate(t)
	m := modeltest.NewOpenAI(t, modeltest.Turn{Text: "Hello from replica A, streamed in small chunks.", ChunkSize: 4, Hold: hold})
	ds, urls := pgReplicasWith(t, 2, daemon.Options{
		Models: scripted(m),
		Agent:  agentrt.Options{RunPollInterval: time.Hour}, // a follower moves on notices only
	})
	const run = "run with spaces"
	if _, err := ds[0].Agent.Start(context.Background(), agentrt.StartRequest{RunID: run, ThreadID: "chat-spaced", Input: "say hello"}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", urls[1]+"/api/v1/runs/"+url.PathEscape(run)+"/events", nil)
	req.Header.Set("Authorization", "Bearer replica-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET events on B: %d", resp.StatusCode)
	}
	done := make(chan error, 1)
	var evs []agui.Event
	go func() {
		done <- agui.ReadFrames(resp.Body, func(_ string, data []byte) error {
			ev, err := agui.Decode(data)
			if err != nil {
				return err
			}
			evs = append(evs, ev)
			if _, ok := ev.(*agui.TextMessageContent); ok {
				release()
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		resp.Body.Close()
		<-done
		t.Fatalf("B's follower stopped after %d events: no flush notice reached it", len(evs))
	}
	if len(evs) == 0 {
		t.Fatal("B's stream is empty")
	}
	if _, ok := evs[len(evs)-1].(*agui.RunFinished); !ok {
		t.Fatalf("B's stream ends with %T", evs[len(evs)-1])
	}
}
