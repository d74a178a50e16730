package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// TestChatAcrossReplicas: a chat's requests at any replica, each replica
// a real `switchboard serve` on one Postgres, a scripted model. A
// follow-up sent through replica B while replica A runs the chat is
// relayed to A and queued into its run (one run, whose next step shows
// the model the follow-up; the same follow-up sent to A answers replayed).
// An AI SDK client that left A mid-answer reattaches through B and gets
// the whole answer once, live while A finishes it.
func TestChatAcrossReplicas(t *testing.T) {
	if os.Getenv(dsnEnv) == "" || bin == "" {
		t.Skipf("set %s to run replicas on Postgres", dsnEnv)
	}
	hold1, hold2 := make(chan struct{}), make(chan struct{})
	llm := modeltest.NewOpenAI(t,
		modeltest.Turn{Text: "Working on it.", Hold: hold1},
		modeltest.Turn{Text: "Done, tagged urgent."},
		modeltest.Turn{Text: "An answer in many small chunks, finished on A.", ChunkSize: 4, Hold: hold2})
	t.Cleanup(func() { // a failed test leaves no model stream held
		for _, h := range []chan struct{}{hold1, hold2} {
			select {
			case <-h:
			default:
				close(h)
			}
		}
	})
	cfg := filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "models:\n  default:\n    provider: openai\n    model: scripted\n    baseURL: %s\n", llm.BaseURL()), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 2, "--config", cfg)
	a, b := "http://"+c.reps[0].addr, "http://"+c.reps[1].addr
	do := func(method, url, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	errEnough := errors.New("enough")
	untilText := func(body io.Reader) {
		t.Helper()
		err := agui.ReadFrames(body, func(_ string, data []byte) error {
			if ev, _ := agui.Decode(data); ev != nil {
				if _, ok := ev.(*agui.TextMessageContent); ok {
					return errEnough
				}
			}
			return nil
		})
		if !errors.Is(err, errEnough) {
			t.Fatalf("the stream ended before any text: %v", err)
		}
	}

	// 1. A follow-up through B joins A's run.
	var started struct{ RunID string }
	decode(t, do("POST", a+"/api/v1/runs", `{"threadId":"chat-fu","input":"open a ticket"}`), &started)
	id := started.RunID
	untilText(do("GET", b+"/api/v1/runs/"+id+"/events", "").Body) // A is mid-turn
	f := `{"text":"and tag it urgent","clientSeq":1,"clientNonce":"n1"}`
	var fu struct {
		Status, RunID string
		Replayed      bool
	}
	t0 := time.Now()
	resp := do("POST", b+"/api/v1/agent/chat/chat-fu/followup", f)
	relayed := time.Since(t0)
	if resp.StatusCode != http.StatusAccepted {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("follow-up through B: %d %s", resp.StatusCode, body)
	}
	if err := json.NewDecoder(resp.Body).Decode(&fu); err != nil || fu.Status != "queued" || fu.RunID != id || fu.Replayed {
		t.Fatalf("follow-up through B: %+v %v, want queued into %s", fu, err, id)
	}
	t0 = time.Now()
	resp = do("POST", a+"/api/v1/agent/chat/chat-fu/followup", f)
	t.Logf("follow-up through B, relayed to A: %s; the same on A (a replay from memory): %s", relayed, time.Since(t0))
	fu = struct {
		Status, RunID string
		Replayed      bool
	}{}
	if err := json.NewDecoder(resp.Body).Decode(&fu); err != nil || resp.StatusCode != http.StatusAccepted || fu.RunID != id || !fu.Replayed {
		t.Fatalf("the same follow-up on A: %d %+v %v", resp.StatusCode, fu, err)
	}
	close(hold1)
	_, _ = io.Copy(io.Discard, do("GET", b+"/api/v1/runs/"+id+"/events", "").Body) // to the run's end
	var info struct {
		Status string
		Steps  int
	}
	decode(t, do("GET", b+"/api/v1/runs/"+id, ""), &info)
	if info.Status != "succeeded" || info.Steps != 2 {
		t.Fatalf("the run after the follow-up: %+v, want succeeded in 2 steps", info)
	}
	var list struct{ Items []struct{ RunID string } }
	decode(t, do("GET", c.proxy.URL+"/api/v1/runs", ""), &list)
	if len(list.Items) != 1 {
		t.Fatalf("%d runs, want the one run: %+v", len(list.Items), list)
	}
	reqs := llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was asked %d times, want 2", len(reqs))
	}
	if body, _ := json.Marshal(reqs[1]); strings.Count(string(body), "and tag it urgent") != 1 {
		t.Fatalf("the run's second step does not show the model the follow-up once: %s", body)
	}

	// 2. An AI SDK client leaves A mid-answer and reattaches through B.
	chat := do("POST", a+"/api/v1/agent/chat", `{"id":"chat-re","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"answer"}]}]}`)
	sc := bufio.NewScanner(chat.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), `"text-delta"`) {
	}
	chat.Body.Close() // a reload
	re := do("GET", b+"/api/v1/agent/chat/chat-re/stream", "")
	if re.StatusCode != http.StatusOK {
		t.Fatalf("reattach through B: %d", re.StatusCode)
	}
	close(hold2) // A finishes the answer while B's client reads
	var text strings.Builder
	starts, done := 0, false
	sc = bufio.NewScanner(re.Body)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			done = true
			break
		}
		var ch struct{ Type, Delta string }
		if err := json.Unmarshal(data, &ch); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		switch ch.Type {
		case "start":
			starts++
		case "text-delta":
			text.WriteString(ch.Delta)
		case "error":
			t.Fatalf("error chunk: %s", data)
		}
	}
	if want := "An answer in many small chunks, finished on A."; text.String() != want || starts != 1 || !done {
		t.Fatalf("reattached through B: text %q (%d start chunks, [DONE] %v), want %q once", text.String(), starts, done, want)
	}
	if n := len(llm.Requests()); n != 3 {
		t.Fatalf("the model was asked %d times, want 3", n)
	}
}
