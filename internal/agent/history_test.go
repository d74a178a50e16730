package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

func TestStripDataURLs(t *testing.T) {
	big := "data:image/png;base64," + strings.Repeat("A", 100)
	in := json.RawMessage(`[{"id":"u","role":"user","parts":[{"type":"file","mediaType":"image/png","url":"` + big + `"},{"type":"text","text":"data:tiny"}]},` +
		`{"id":"v","role":"user","content":[{"type":"image","source":{"type":"data","value":"` + strings.Repeat("B", 100) + `","mimeType":"image/png"}}]}]`)
	out := string(agent.StripDataURLs(in, 50))
	if strings.Contains(out, "AAAA") || strings.Contains(out, "BBBB") {
		t.Fatalf("not stripped: %s", out)
	}
	for _, s := range []string{"data:image/png;base64,[122 bytes removed from saved history]", `"text":"data:tiny"`, "100 bytes removed"} {
		if !strings.Contains(out, s) {
			t.Errorf("%s lacks %s", out, s)
		}
	}
	small := json.RawMessage(`[{"url":"data:x,y"}]`)
	if string(agent.StripDataURLs(small, 50)) != string(small) {
		t.Error("a document without large data: URLs must be kept byte for byte")
	}
}

func TestHistoryRoutesAndOwnership(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	h, err := e.rt.History(ctx, "chat-h", "session:alice")
	if err != nil || string(h.Messages) != "[]" || h.Revision != 0 {
		t.Fatalf("empty history %+v %v", h, err)
	}
	ui := json.RawMessage(`[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]},{"id":"a1","role":"assistant","parts":[{"type":"text","text":"hello"}]}]`)
	put, err := e.rt.PutHistory(ctx, "chat-h", "session:alice", ui)
	if err != nil || put.Revision != 1 || put.Owner != "session:alice" {
		t.Fatalf("%+v %v", put, err)
	}
	// Another owner's chat reads as an unknown one; CheckOwner tells.
	if h, err := e.rt.History(ctx, "chat-h", "session:mallory"); err != nil || string(h.Messages) != "[]" || h.Revision != 0 {
		t.Errorf("another owner: %+v %v", h, err)
	}
	if err := e.rt.CheckOwner(ctx, "chat-h", "session:mallory"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Errorf("another owner's check: %v", err)
	}
	if _, err := e.rt.PutHistory(ctx, "chat-h", "session:mallory", json.RawMessage(`[]`)); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Errorf("another owner's put: %v", err)
	}
	if _, err := e.rt.History(ctx, "chat-h", ""); err != nil {
		t.Errorf("the admin: %v", err)
	}
	if _, err := e.rt.PutHistory(ctx, "chat-h", "session:alice", json.RawMessage(`{"not":"array"}`)); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Errorf("non-array: %v", err)
	}
	// A runtime-owned run continues from UIMessages saved by a client.
	e.model.Push(modeltest.Turn{Text: "again"})
	run, err := e.rt.Start(ctx, agent.StartRequest{ThreadID: "chat-h", Owner: "session:alice", Input: "and now?"})
	if err != nil {
		t.Fatal(err)
	}
	events(t, run)
	msgs := e.model.Requests()[0]["messages"].([]any)
	if len(msgs) != 4 || msgs[2].(map[string]any)["content"] != "hello" {
		t.Errorf("model saw %v", msgs)
	}
	if _, err := e.rt.Start(ctx, agent.StartRequest{ThreadID: "chat-h", Owner: "session:mallory", Input: "x"}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Errorf("start on another's chat: %v", err)
	}
}

// TestFanOut: many subscribers reading while the run writes all see the
// same complete stream.
func TestFanOut(t *testing.T) {
	e := newEnv(t, nil)
	e.model.Push(modeltest.Turn{Text: strings.Repeat("word ", 200), ChunkSize: 5})
	run, err := e.rt.Start(context.Background(), agent.StartRequest{Input: "talk"})
	if err != nil {
		t.Fatal(err)
	}
	const subs = 100
	got := make([]int, subs)
	var wg sync.WaitGroup
	for i := range subs {
		wg.Go(func() {
			seq := 0
			for {
				recs, more, complete := run.Events(seq)
				for _, r := range recs {
					if r.Seq != seq {
						t.Errorf("subscriber %d: seq %d, want %d", i, r.Seq, seq)
						return
					}
					seq++
				}
				if complete && len(recs) == 0 {
					got[i] = seq
					return
				}
				if len(recs) == 0 {
					<-more
				}
			}
		})
	}
	wg.Wait()
	want := len(events(t, run))
	for i, n := range got {
		if n != want {
			t.Fatalf("subscriber %d saw %d of %d events", i, n, want)
		}
	}
}
