package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// frame is one SSE frame of a run's stream.
type frame struct {
	id   string
	data string
}

var errEnough = errors.New("enough")

// readFrames reads a run's stream until stop says so (or it ends).
func readFrames(t *testing.T, body io.Reader, stop func(frame) bool) []frame {
	t.Helper()
	var out []frame
	err := agui.ReadFrames(body, func(id string, data []byte) error {
		f := frame{id, string(bytes.Clone(data))}
		out = append(out, f)
		if stop != nil && stop(f) {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		t.Fatal(err)
	}
	return out
}

// TestRunFollowedFromAnotherReplica: a run of replica A (its own runtime
// and server) is answered by replica B, which does not hold it, from the
// store both share: GET /runs/{id} while it runs, its events as A flushes
// them (woken by A's flush notifications), a resume with Last-Event-ID on
// B that continues exactly where the first stream stopped, and the whole
// log — ids and bytes — equal to what A itself serves. GET /runs on B
// lists it.
// twoReplicas is an assistant env (replica A) and a second runtime and
// server over the same store (replica B), A's flush notifications and B's
// cancel requests passed between them as the daemon's bus passes them
// (B's interest in A's runs, and A's flush notices to B).
func twoReplicas(t *testing.T, hitl bool) (*assistantEnv, *httptest.Server, *agent.Runtime, func(base, path, lastID string) *http.Response) {
	var b atomic.Pointer[agent.Runtime]
	e := newAssistantOpts(t, true, hitl, func(ao *agent.Options, st *sqlite.Store) {
		ao.Runs, ao.Replica = st, "rep_a"
		ao.RunFlushed = func(replica, id string, seq int) {
			if rt := b.Load(); rt != nil && replica == "rep_b" {
				rt.Notified(id, seq)
			}
		}
	})
	models, err := model.NewResolver(map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: e.model.BaseURL()}},
		&model.Options{MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ob := agent.Options{Broker: e.opts.Broker, Registry: e.opts.Registry, History: e.store, Runs: e.store, Replica: "rep_b", Models: models,
		RunInterest: func(owner, id string) {
			if owner == "rep_a" {
				e.rt.Interested(id, "rep_b")
			}
		},
		RunCancel: func(_, id string) {
			if run, err := e.rt.Get(id); err == nil {
				go run.Stop()
			}
		},
		RelayFollowUp: func(ctx context.Context, replica, chat string, f switchboard.FollowUp, owner string) (switchboard.FollowUpResult, bool, error) {
			if replica != "rep_a" {
				return switchboard.FollowUpResult{}, false, switchboard.Errorf(switchboard.CodeUnavailable, "no replica %s", replica)
			}
			return e.rt.QueueFollowUp(ctx, chat, f, owner)
		}}
	if hitl {
		ob.Approvals = e.approvals
	}
	rtB, err := agent.New(ob)
	if err != nil {
		t.Fatal(err)
	}
	b.Store(rtB)
	hB, err := httpapi.New(httpapi.Options{Registry: e.opts.Registry, AdminToken: token, Broker: e.opts.Broker, Sessions: e.opts.Sessions, Agent: rtB})
	if err != nil {
		t.Fatal(err)
	}
	srvB := httptest.NewServer(hB)
	t.Cleanup(func() { srvB.Close(); rtB.Close() })
	get := func(base, path, lastID string) *http.Response {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
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
	return e, srvB, rtB, get
}

func TestRunFollowedFromAnotherReplica(t *testing.T) {
	e, srvB, rtB, get := twoReplicas(t, false)
	hold := make(chan struct{})
	e.model.Push(modeltest.Turn{Text: "Hello from replica A, streamed in small chunks.", ChunkSize: 4, Hold: hold, InputTokens: 7, OutputTokens: 11})
	resp := e.post(t, "POST", "/api/v1/runs", token, `{"threadId":"chat-x","input":"say hello"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /runs on A: %d %v", resp.StatusCode, decodeJSON(t, resp))
	}
	id := decodeJSON(t, resp)["runId"].(string)
	if _, err := rtB.Get(id); err == nil {
		t.Fatal("B holds A's run in memory; the test would not test the store")
	}

	if got := decodeJSON(t, get(srvB.URL, "/api/v1/runs/"+id, "")); got["status"] != "running" || got["threadId"] != "chat-x" {
		t.Fatalf("GET /runs/{id} on B while A runs it: %v", got)
	}
	// Follow on B until the first text delta (A holds the model's stream
	// after it), then drop the stream.
	first := readFrames(t, get(srvB.URL, "/api/v1/runs/"+id+"/events", "").Body, func(f frame) bool {
		ev, _ := agui.Decode([]byte(f.data))
		_, ok := ev.(*agui.TextMessageContent)
		return ok
	})
	close(hold)
	last := first[len(first)-1].id
	rest := readFrames(t, get(srvB.URL, "/api/v1/runs/"+id+"/events", last).Body, nil)

	whole := readFrames(t, get(e.srv.URL, "/api/v1/runs/"+id+"/events", "").Body, nil)
	got := append(append([]frame(nil), first...), rest...)
	if len(got) != len(whole) {
		t.Fatalf("B served %d frames (%d + %d after Last-Event-ID %s); A serves %d", len(got), len(first), len(rest), last, len(whole))
	}
	var evs []agui.Event
	for i := range whole {
		if got[i] != whole[i] {
			t.Fatalf("frame %d: B served %+v, A serves %+v", i, got[i], whole[i])
		}
		ev, err := agui.Decode([]byte(got[i].data))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if err := agui.CheckAll(evs); err != nil {
		t.Fatalf("lifecycle of B's stream: %v", err)
	}
	if _, ok := evs[len(evs)-1].(*agui.RunFinished); !ok {
		t.Fatalf("B's stream ends with %T", evs[len(evs)-1])
	}
	// The stream ended because the stored run is final: B's record says so.
	info := decodeJSON(t, get(srvB.URL, "/api/v1/runs/"+id, ""))
	if info["status"] != "succeeded" || info["events"] != float64(len(whole)) ||
		info["usage"].(map[string]any)["totalTokens"] != float64(18) {
		t.Fatalf("GET /runs/{id} on B after the run: %v", info)
	}
	list := decodeJSON(t, get(srvB.URL, "/api/v1/runs", ""))
	if items := list["items"].([]any); len(items) != 1 || items[0].(map[string]any)["runId"] != id {
		t.Fatalf("GET /runs on B: %v", list)
	}
	if r := get(srvB.URL, "/api/v1/runs/nope/events", ""); r.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown run on B: %d", r.StatusCode)
	}
}

// TestRunCancelledFromAnotherReplica: POST /runs/{id}/cancel on replica B
// stops replica A's run (B asks A, then reads the stored outcome), and
// answers with the cancelled record.
func TestRunCancelledFromAnotherReplica(t *testing.T) {
	e, srvB, _, get := twoReplicas(t, false)
	hold := make(chan struct{})
	defer close(hold)
	e.model.Push(modeltest.Turn{Text: "thinking hard about it", Hold: hold})
	id := decodeJSON(t, e.post(t, "POST", "/api/v1/runs", token, `{"input":"go"}`))["runId"].(string)
	// Wait until B can read the run's first text: A is mid-turn.
	readFrames(t, get(srvB.URL, "/api/v1/runs/"+id+"/events", "").Body, func(f frame) bool {
		ev, _ := agui.Decode([]byte(f.data))
		_, ok := ev.(*agui.TextMessageContent)
		return ok
	})
	req, _ := http.NewRequest("POST", srvB.URL+"/api/v1/runs/"+id+"/cancel", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := decodeJSON(t, resp); got["status"] != "cancelled" {
		t.Fatalf("cancel on B: %v", got)
	}
	run, err := e.rt.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	<-run.Done()
	if st := run.Info().Status; st != "cancelled" {
		t.Fatalf("A's run after B's cancel: %s", st)
	}
}

// TestInterruptResumedOnAnotherReplica: an AG-UI run on replica A ends
// with an approval interrupt; the client's resume lands on replica B,
// which does not hold the interrupted run. B rebuilds the interrupt from
// the store, decides the approval (which wakes the call parked in A's
// broker), reads the call's outcome from the store once A has run it, and
// continues the conversation: the tool ran once, on A, and B's stream
// carries its result and the model's answer.
func TestInterruptResumedOnAnotherReplica(t *testing.T) {
	e, srvB, rtB, _ := twoReplicas(t, true)
	e.model.Push(createThenAnswer...)
	resp := e.post(t, "POST", "/api/v1/agui", token, `{"threadId":"chat-hitl","runId":"run-a","messages":[{"id":"u1","role":"user","content":"create 'Ship it' in p1"}],"tools":[],"context":[]}`)
	evs, _ := readAGUI(t, resp.Body)
	fin, ok := evs[len(evs)-1].(*agui.RunFinished)
	if !ok || fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeInterrupt {
		t.Fatalf("A's run ended with %T %+v", evs[len(evs)-1], fin)
	}
	snap, ok := evs[len(evs)-2].(*agui.MessagesSnapshot)
	if !ok {
		t.Fatalf("before RUN_FINISHED: %T", evs[len(evs)-2])
	}
	if len(e.tasks) != 0 {
		t.Fatal("the tool ran before approval")
	}
	in := fin.Outcome.Interrupts[0]
	// The client (CopilotKit) resumes under the interrupted run's own id,
	// with the assistant message that made the call; it lands on B.
	msgs, _ := json.Marshal(snap.Messages)
	req, _ := http.NewRequest("POST", srvB.URL+"/api/v1/agui", strings.NewReader(`{"threadId":"chat-hitl","runId":"run-a","messages":`+string(msgs)+
		`,"tools":[],"context":[],"resume":[{"interruptId":"`+in.ID+`","status":"resolved","payload":{"approved":true}}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	if resp2.StatusCode != http.StatusOK {
		t.Fatalf("resume on B: %d %v", resp2.StatusCode, decodeJSON(t, resp2))
	}
	evs2, _ := readAGUI(t, resp2.Body)
	var result *agui.ToolCallResult
	for _, ev := range evs2 {
		if r, ok := ev.(*agui.ToolCallResult); ok {
			result = r
		}
	}
	if result == nil || result.ToolCallID != in.ToolCallID || !strings.Contains(result.Content, `"t1"`) {
		t.Fatalf("B's stream carries no result of the approved call: %+v", result)
	}
	if fin2, ok := evs2[len(evs2)-1].(*agui.RunFinished); !ok || fin2.Outcome != nil {
		t.Fatalf("B's run ended with %T %+v", evs2[len(evs2)-1], evs2[len(evs2)-1])
	}
	if len(e.tasks) != 1 || len(e.model.Requests()) != 2 {
		t.Fatalf("the tool ran %d times, the model was asked %d times", len(e.tasks), len(e.model.Requests()))
	}
	if _, err := rtB.Get("run-a"); err != nil {
		t.Fatalf("B holds no resumed run: %v", err)
	}
	a, _ := e.approvals.Get(context.Background(), in.ID)
	if a.Status != switchboard.ApprovalApproved || a.Channel != "agui" {
		t.Fatalf("the approval after B's resume: %+v", a)
	}
}

// TestInterruptResumedOnSameReplicaWithStore: the resume (under the
// interrupted run's own id, at once after its interrupt) lands on the
// replica that ran it; the new run takes the stored id over, and replica
// B reads the resumed run's outcome from the store.
func TestInterruptResumedOnSameReplicaWithStore(t *testing.T) {
	e, srvB, _, get := twoReplicas(t, true)
	e.model.Push(createThenAnswer...)
	evs, _ := readAGUI(t, e.post(t, "POST", "/api/v1/agui", token, `{"threadId":"chat-s","runId":"run-s","messages":[{"id":"u1","role":"user","content":"create 'Ship it' in p1"}],"tools":[],"context":[]}`).Body)
	fin := evs[len(evs)-1].(*agui.RunFinished)
	snap := evs[len(evs)-2].(*agui.MessagesSnapshot)
	msgs, _ := json.Marshal(snap.Messages)
	resp := e.post(t, "POST", "/api/v1/agui", token, `{"threadId":"chat-s","runId":"run-s","messages":`+string(msgs)+
		`,"tools":[],"context":[],"resume":[{"interruptId":"`+fin.Outcome.Interrupts[0].ID+`","status":"resolved","payload":{"approved":true}}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resume on A: %d %v", resp.StatusCode, decodeJSON(t, resp))
	}
	evs, _ = readAGUI(t, resp.Body)
	if end, ok := evs[len(evs)-1].(*agui.RunFinished); !ok || end.Outcome != nil || len(e.tasks) != 1 {
		t.Fatalf("resumed run ended with %T, the tool ran %d times", evs[len(evs)-1], len(e.tasks))
	}
	frames := readFrames(t, get(srvB.URL, "/api/v1/runs/run-s/events", "").Body, nil)
	if len(frames) != len(evs) {
		t.Fatalf("B serves %d events of the resumed run, A streamed %d", len(frames), len(evs))
	}
	if info := decodeJSON(t, get(srvB.URL, "/api/v1/runs/run-s", "")); info["status"] != "succeeded" {
		t.Fatalf("the stored run on B: %v", info)
	}
}
