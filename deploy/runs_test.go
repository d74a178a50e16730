package deploy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// TestRunFollowedAcrossReplicas: a run started on replica A (a scripted
// model, a local server speaking OpenAI's streaming wire format, holds its
// answer after the first chunk) is followed from replica B with the same
// event ids; B's follower drops and resumes with Last-Event-ID; then A is
// killed with SIGKILL mid-run, and the follower on B sees the run end with
// RUN_ERROR {code: OUTCOME_UNKNOWN} appended by the survivor's takeover,
// GET /runs/{id} says failed on every replica left, and the model was
// asked once (nothing ran twice).
func TestRunFollowedAcrossReplicas(t *testing.T) {
	if os.Getenv(dsnEnv) == "" || bin == "" {
		t.Skipf("set %s to run replicas on Postgres", dsnEnv)
	}
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	llm := modeltest.NewOpenAI(t, modeltest.Turn{Text: "Hello from replica A, in small chunks.", ChunkSize: 4, Hold: hold})
	cfg := filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "models:\n  default:\n    provider: openai\n    model: scripted\n    baseURL: %s\n", llm.BaseURL()), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 2, "--config", cfg)
	a, b := "http://"+c.reps[0].addr, "http://"+c.reps[1].addr
	do := func(method, url, lastID, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
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
	resp := do("POST", a+"/api/v1/runs", "", `{"threadId":"chat-1","input":"say hello"}`)
	if resp.StatusCode != http.StatusCreated {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /runs on A: %d %s", resp.StatusCode, body)
	}
	var started struct{ RunID string }
	decode(t, resp, &started)
	id := started.RunID

	// B follows until the first text delta (A's model is held after it).
	type frame struct{ id, data string }
	errEnough := errors.New("enough")
	read := func(body io.Reader, stop func(agui.Event) bool) []frame {
		var out []frame
		err := agui.ReadFrames(body, func(fid string, data []byte) error {
			out = append(out, frame{fid, string(bytes.Clone(data))})
			ev, err := agui.Decode(data)
			if err != nil {
				return err
			}
			if stop != nil && stop(ev) {
				return errEnough
			}
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			t.Errorf("reading the run's stream: %v", err)
		}
		return out
	}
	// The model's first delta, not the echo of the user's input (a text
	// message too): only then is A's model call known to be under way.
	assistant := map[string]bool{}
	first := read(do("GET", b+"/api/v1/runs/"+id+"/events", "", "").Body, func(ev agui.Event) bool {
		switch e := ev.(type) {
		case *agui.TextMessageStart:
			assistant[e.MessageID] = e.Role != agui.RoleUser
		case *agui.TextMessageContent:
			return assistant[e.MessageID]
		}
		return false
	})
	if len(first) == 0 {
		t.Fatal("B served no event of A's run")
	}
	last := first[len(first)-1].id
	var info struct {
		Status string
		Error  *struct{ Code string }
	}
	decode(t, do("GET", b+"/api/v1/runs/"+id, "", ""), &info)
	if info.Status != "running" {
		t.Fatalf("GET /runs/{id} on B while A runs it: %+v", info)
	}

	// B resumes after the last id it saw; A dies under it.
	rest := make(chan []frame, 1)
	follow := do("GET", b+"/api/v1/runs/"+id+"/events", last, "")
	go func() { rest <- read(follow.Body, nil) }()
	c.kill(0)
	var tail []frame
	select {
	case tail = <-rest:
	case <-time.After(60 * time.Second):
		t.Fatal("the follower on B saw no end of the run within 60 s of A's death")
	}
	all := append(first, tail...)
	var evs []agui.Event
	for i, f := range all {
		if f.id != strconv.Itoa(i) {
			t.Fatalf("frame %d has id %s: ids must run on without gap or repeat across replicas and resumes", i, f.id)
		}
		ev, err := agui.Decode([]byte(f.data))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	end, ok := evs[len(evs)-1].(*agui.RunError)
	if !ok || end.Code != "OUTCOME_UNKNOWN" {
		t.Fatalf("the run's last event on B: %s", all[len(all)-1].data)
	}
	decode(t, do("GET", b+"/api/v1/runs/"+id, "", ""), &info)
	if info.Status != "failed" || info.Error == nil || info.Error.Code != "OUTCOME_UNKNOWN" {
		t.Fatalf("GET /runs/{id} on B after A died: %+v", info)
	}
	var list struct {
		Items []struct{ RunID, Status string }
	}
	decode(t, do("GET", c.proxy.URL+"/api/v1/runs", "", ""), &list)
	if len(list.Items) != 1 || list.Items[0].RunID != id || list.Items[0].Status != "failed" {
		t.Fatalf("GET /runs through the balancer: %+v", list)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times; the dead replica's run must not run again", n)
	}
}

// decode reads a JSON response into v.
func decode(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, body)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestInterruptResumedAcrossReplicas: an AG-UI run on replica A ends with
// an approval interrupt for an api tool; the client's resume (under the
// interrupted run's own id, as CopilotKit sends it) lands on replica B. B
// rebuilds the interrupt from the store and decides the approval, which
// wakes the call parked in A's broker; A runs it — once — and B continues
// the conversation with its stored outcome.
func TestInterruptResumedAcrossReplicas(t *testing.T) {
	if os.Getenv(dsnEnv) == "" || bin == "" {
		t.Skipf("set %s to run replicas on Postgres", dsnEnv)
	}
	llm := modeltest.NewOpenAI(t,
		modeltest.Turn{Text: "Sending.", ToolCalls: []modeltest.Call{{ID: "c1", Name: "test_send", Args: `{"msg":"hi"}`}}},
		modeltest.Turn{Text: "Sent."})
	cfg := filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "models:\n  default:\n    provider: openai\n    model: scripted\n    baseURL: %s\n", llm.BaseURL()), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 2, "--config", cfg)
	be := newBackend(t)
	c.register(be.tools(), "test.send")
	agentRun := func(base, body string) []agui.Event {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/api/v1/agui", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("POST /agui on %s: %d %s", base, resp.StatusCode, b)
		}
		var evs []agui.Event
		if err := agui.ReadFrames(resp.Body, func(_ string, data []byte) error {
			ev, err := agui.Decode(data)
			evs = append(evs, ev)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := agui.CheckAll(evs); err != nil {
			t.Fatalf("lifecycle: %v", err)
		}
		return evs
	}
	a, b := "http://"+c.reps[0].addr, "http://"+c.reps[1].addr
	evs := agentRun(a, `{"threadId":"chat-r","runId":"run-r","messages":[{"id":"u1","role":"user","content":"send hi"}],"tools":[],"context":[]}`)
	fin, ok := evs[len(evs)-1].(*agui.RunFinished)
	if !ok || fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeInterrupt {
		t.Fatalf("A's run ended with %T %+v", evs[len(evs)-1], evs[len(evs)-1])
	}
	snap, ok := evs[len(evs)-2].(*agui.MessagesSnapshot)
	if !ok {
		t.Fatalf("before RUN_FINISHED: %T", evs[len(evs)-2])
	}
	if n := be.count(`{"msg":"hi"}`); n != 0 {
		t.Fatalf("the call ran %d times before its approval", n)
	}
	msgs, _ := json.Marshal(snap.Messages)
	in := fin.Outcome.Interrupts[0]
	evs = agentRun(b, `{"threadId":"chat-r","runId":"run-r","messages":`+string(msgs)+`,"tools":[],"context":[],`+
		`"resume":[{"interruptId":"`+in.ID+`","status":"resolved","payload":{"approved":true}}]}`)
	var result *agui.ToolCallResult
	for _, ev := range evs {
		if r, ok := ev.(*agui.ToolCallResult); ok {
			result = r
		}
	}
	if result == nil || result.ToolCallID != in.ToolCallID || !strings.Contains(result.Content, `"ok":true`) {
		t.Fatalf("B's resumed run carries no result of the approved call: %+v", result)
	}
	if end, ok := evs[len(evs)-1].(*agui.RunFinished); !ok || end.Outcome != nil {
		t.Fatalf("B's resumed run ended with %T %+v", evs[len(evs)-1], evs[len(evs)-1])
	}
	if n := be.count(`{"msg":"hi"}`); n != 1 {
		t.Fatalf("the approved call ran %d times, want once", n)
	}
	if n := len(llm.Requests()); n != 2 {
		t.Fatalf("the model was asked %d times, want 2", n)
	}
}
