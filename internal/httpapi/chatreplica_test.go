package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/aguitest"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// postTo sends an admin request with a JSON body to base.
func postTo(t *testing.T, base, method, path, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestFollowUpRelayedToAnotherReplica: a follow-up that lands on replica
// B while replica A runs the chat joins A's run (B finds it in the store
// and relays): one run, which consumes the follow-up in its next step.
// The same (clientSeq, clientNonce) on A and again on B answers the same,
// replayed, and is queued once; another nonce for that clientSeq on B is
// FOLLOWUP_SEQUENCE_CONFLICT, as on one replica. After the run ended, a
// retry on B of a follow-up only A saw is answered from A's record.
func TestFollowUpRelayedToAnotherReplica(t *testing.T) {
	e, srvB, rtB, get := twoReplicas(t, false)
	hold := make(chan struct{})
	e.model.Push(modeltest.Turn{Text: "working on it", Hold: hold}, modeltest.Turn{Text: "done, with the extra"})
	id := decodeJSON(t, e.post(t, "POST", "/api/v1/runs", token, `{"threadId":"chat-fu","input":"start"}`))["runId"].(string)
	run, _ := e.rt.Get(id)

	f := `{"text":"and tag it urgent","clientSeq":1,"clientNonce":"n1"}`
	r1 := postTo(t, srvB.URL, "POST", "/api/v1/agent/chat/chat-fu/followup", f)
	if v := decodeJSON(t, r1); r1.StatusCode != http.StatusAccepted || v["status"] != "queued" || v["runId"] != id || v["replayed"] != nil {
		t.Fatalf("follow-up on B: %d %v", r1.StatusCode, v)
	}
	if rtB.ActiveRun("chat-fu") != nil {
		t.Fatal("B started a run of its own")
	}
	r2 := e.post(t, "POST", "/api/v1/agent/chat/chat-fu/followup", token, f)
	if v := decodeJSON(t, r2); r2.StatusCode != http.StatusAccepted || v["status"] != "queued" || v["runId"] != id || v["replayed"] != true {
		t.Errorf("the same follow-up on A: %d %v", r2.StatusCode, v)
	}
	r3 := postTo(t, srvB.URL, "POST", "/api/v1/agent/chat/chat-fu/followup", f)
	if v := decodeJSON(t, r3); r3.StatusCode != http.StatusAccepted || v["runId"] != id || v["replayed"] != true {
		t.Errorf("the same follow-up on B again: %d %v", r3.StatusCode, v)
	}
	r4 := postTo(t, srvB.URL, "POST", "/api/v1/agent/chat/chat-fu/followup", `{"text":"x","clientSeq":1,"clientNonce":"n2"}`)
	if v := decodeJSON(t, r4); r4.StatusCode != http.StatusConflict || v["error"].(map[string]any)["code"] != "FOLLOWUP_SEQUENCE_CONFLICT" {
		t.Errorf("another nonce on B: %d %v", r4.StatusCode, v)
	}
	// A follow-up only A saw, queued there.
	r5 := e.post(t, "POST", "/api/v1/agent/chat/chat-fu/followup", token, `{"text":"and assign it to me","clientSeq":5,"clientNonce":"n5"}`)
	if v := decodeJSON(t, r5); r5.StatusCode != http.StatusAccepted || v["runId"] != id {
		t.Fatalf("a second follow-up on A: %d %v", r5.StatusCode, v)
	}
	close(hold)
	<-run.Done()
	if info := run.Info(); info.Steps != 2 || info.Status != switchboard.RunSucceeded {
		t.Fatalf("the follow-up was not consumed in a second step: %+v", info)
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was called %d times, want 2 (one run, two steps)", len(reqs))
	}
	body, _ := json.Marshal(reqs[1])
	if n := strings.Count(string(body), "and tag it urgent"); n != 1 {
		t.Errorf("the model's second step sees the follow-up %d times, want once: %s", n, body)
	}
	var queued int
	recs, _, _ := run.Events(0)
	for _, r := range recs {
		if strings.Contains(string(r.JSON), "switchboard.followup.queued") && strings.Contains(string(r.JSON), `"clientNonce":"n1"`) {
			queued++
		}
	}
	if queued != 1 {
		t.Errorf("%d followup.queued events of clientSeq 1, want 1", queued)
	}
	list := decodeJSON(t, get(srvB.URL, "/api/v1/runs", ""))
	if items := list["items"].([]any); len(items) != 1 {
		t.Errorf("runs: %v", list)
	}

	// The chat is idle now. A retry on B of the follow-up only A saw
	// answers as A did (A's record decides), and starts nothing; another
	// nonce for its clientSeq is a conflict.
	r6 := postTo(t, srvB.URL, "POST", "/api/v1/agent/chat/chat-fu/followup", `{"text":"and assign it to me","clientSeq":5,"clientNonce":"n5"}`)
	if v := decodeJSON(t, r6); r6.StatusCode != http.StatusAccepted || v["status"] != "queued" || v["runId"] != id || v["replayed"] != true {
		t.Errorf("a retry on B after the run ended: %d %v", r6.StatusCode, v)
	}
	r7 := postTo(t, srvB.URL, "POST", "/api/v1/agent/chat/chat-fu/followup", `{"text":"x","clientSeq":5,"clientNonce":"n6"}`)
	if v := decodeJSON(t, r7); r7.StatusCode != http.StatusConflict || v["error"].(map[string]any)["code"] != "FOLLOWUP_SEQUENCE_CONFLICT" {
		t.Errorf("another nonce on B after the run ended: %d %v", r7.StatusCode, v)
	}
	// A new follow-up on B starts a run there.
	e.model.Push(modeltest.Turn{Text: "again"})
	r8 := postTo(t, srvB.URL, "POST", "/api/v1/agent/chat/chat-fu/followup", `{"text":"one more","clientSeq":6,"clientNonce":"n7"}`)
	v := decodeJSON(t, r8)
	if r8.StatusCode != http.StatusCreated || v["status"] != "started" || v["runId"] == id {
		t.Fatalf("follow-up on B of an idle chat: %d %v", r8.StatusCode, v)
	}
	runB, err := rtB.Get(v["runId"].(string))
	if err != nil {
		t.Fatal(err)
	}
	<-runB.Done()
	if n := len(e.model.Requests()); n != 3 {
		t.Errorf("the model was called %d times, want 3 (the retry started nothing)", n)
	}
}

// TestAISDKChatReattachOnAnotherReplica: a useChat client that reloads
// mid-answer and reattaches (the `ai` package's own reconnectToStream)
// through replica B, while replica A runs the chat, gets the whole answer
// once, under the run's message id, from the stored events; DELETE of the
// stream on B stops A's run.
func TestAISDKChatReattachOnAnotherReplica(t *testing.T) {
	e, _, rtB, _ := twoReplicas(t, false)
	aguitest.Require(t)
	// B tells A that its client reads (the daemon's runs.reading).
	reading := make(chan string, 100)
	hB, err := httpapi.New(httpapi.Options{Registry: e.opts.Registry, AdminToken: token, Broker: e.opts.Broker, Sessions: e.opts.Sessions, Agent: rtB,
		ChatReading: func(id string) {
			e.srv.Config.Handler.(*httpapi.Server).ChatRead(id)
			select {
			case reading <- id:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	srvA, srvB := newStaged(t, e.srv.Config.Handler), newStaged(t, hB)
	hold := make(chan struct{})
	var release sync.Once
	defer release.Do(func() { close(hold) })
	e.model.Push(modeltest.Turn{Text: "first second third", ChunkSize: 6, Hold: hold})
	run := postThenLeave(t, srvA, e.rt, "chat-re")
	go func() {
		// Let the answer finish once B serves its stream: B's follower
		// then reads the rest as A stores it.
		<-srvB.attached
		release.Do(func() { close(hold) })
	}()
	var out struct {
		Active  bool             `json:"active"`
		Chunks  []map[string]any `json:"chunks"`
		Errors  []string         `json:"errors"`
		Message struct {
			ID    string           `json:"id"`
			Parts []map[string]any `json:"parts"`
		} `json:"message"`
	}
	hdrs := `{"authorization":"Bearer ` + token + `"}`
	aguitest.Run(t, nil, &out, "aisdkresume", srvB.URL+"/api/v1/agent/chat", "chat-re", hdrs)
	if !out.Active || len(out.Errors) > 0 {
		t.Fatalf("reattach on B: %+v", out)
	}
	var text []string
	starts := 0
	for _, c := range out.Chunks {
		if c["type"] == "start" {
			starts++
		}
	}
	for _, p := range out.Message.Parts {
		if p["type"] == "text" {
			text = append(text, p["text"].(string))
		}
	}
	if got := strings.Join(text, ""); got != "first second third" || out.Message.ID != "msg_"+run.ID() || starts != 1 {
		t.Errorf("reattached on B: message %q text %q (%d start chunks), want msg_%s \"first second third\" once", out.Message.ID, got, starts, run.ID())
	}
	if last := out.Chunks[len(out.Chunks)-1]["type"]; last != "finish" {
		t.Errorf("last chunk %v", last)
	}
	select {
	case id := <-reading:
		if id != run.ID() {
			t.Errorf("B told A that run %s is read, want %s", id, run.ID())
		}
	default:
		t.Error("B did not tell A that its client reads the run (A would cancel it as unread)")
	}
	<-run.Done()
	if r := postTo(t, srvB.URL, "GET", "/api/v1/agent/chat/chat-re/stream", ""); r.StatusCode != http.StatusNoContent {
		t.Errorf("reattach on B after the run: %d, want 204", r.StatusCode)
	}
	// B knows the chat is an AI SDK one from A's stored run: no native
	// follow-up, as A answers.
	if h := decodeJSON(t, postTo(t, srvB.URL, "GET", "/api/v1/agent/capabilities?session=chat-re", "")); h["harness"] != "aisdk" || h["nativeFollowUp"] != false {
		t.Errorf("capabilities on B: %v", h)
	}
	r4 := postTo(t, srvB.URL, "POST", "/api/v1/agent/chat/chat-re/followup", `{"text":"x","clientSeq":1,"clientNonce":"n"}`)
	if v := decodeJSON(t, r4); r4.StatusCode != http.StatusConflict || v["error"].(map[string]any)["code"] != "FOLLOWUP_UNSUPPORTED" {
		t.Errorf("follow-up on B of A's AI SDK chat: %d %v", r4.StatusCode, v)
	}

	// DELETE .../stream on B stops A's run in progress.
	hold2 := make(chan struct{})
	defer close(hold2)
	e.model.Push(modeltest.Turn{Text: "a long answer", Hold: hold2})
	run2 := postThenLeave(t, srvA, e.rt, "chat-stop")
	r := postTo(t, srvB.URL, "DELETE", "/api/v1/agent/chat/chat-stop/stream", "")
	if v := decodeJSON(t, r); r.StatusCode != http.StatusOK || v["status"] != "cancelled" || v["runId"] != run2.ID() {
		t.Errorf("DELETE stream on B: %d %v", r.StatusCode, v)
	}
	<-run2.Done()
	if r := postTo(t, srvB.URL, "DELETE", "/api/v1/agent/chat/nobody/stream", ""); r.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE stream of a chat with no run: %d", r.StatusCode)
	}
	_, _ = io.Copy(io.Discard, r.Body)
}
