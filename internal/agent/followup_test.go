package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// busyRun starts a run on chat whose model holds mid-answer until the
// returned release is called.
func busyRun(t *testing.T, e *env, chat, session string) (*agent.Run, func()) {
	t.Helper()
	hold := make(chan struct{})
	e.model.Push(modeltest.Turn{Text: "Working on it…", Hold: hold})
	run, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: chat, SessionID: session, Input: "start"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, run, func(ev agui.Event) bool {
		c, ok := ev.(*agui.TextMessageContent)
		return ok && strings.HasPrefix(c.Delta, "Working")
	})
	var once bool
	release := func() {
		if !once {
			once = true
			close(hold)
		}
	}
	t.Cleanup(release)
	return run, release
}

func TestFollowUpQueuedAndConsumed(t *testing.T) {
	e := newEnv(t, nil)
	run, release := busyRun(t, e, "chat-f", "")
	f := switchboard.FollowUp{Text: "also add a due date", ClientSeq: 1, ClientNonce: "n-1"}
	res, err := e.rt.FollowUp(context.Background(), "chat-f", f, agent.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "queued" || res.RunID != run.ID() || res.Replayed {
		t.Fatalf("%+v", res)
	}
	// The same pair again is idempotent: same answer, nothing queued twice.
	again, err := e.rt.FollowUp(context.Background(), "chat-f", f, agent.StartRequest{})
	if err != nil || again.Status != "queued" || again.RunID != run.ID() || !again.Replayed {
		t.Fatalf("replay: %+v %v", again, err)
	}
	// The same seq with another nonce conflicts.
	_, err = e.rt.FollowUp(context.Background(), "chat-f", switchboard.FollowUp{Text: "other", ClientSeq: 1, ClientNonce: "n-2"}, agent.StartRequest{})
	if switchboard.CodeOf(err) != switchboard.CodeFollowupSequenceConflict {
		t.Fatalf("seq conflict: %v", err)
	}
	if q := run.Info().Queued; q != 1 {
		t.Fatalf("%d queued", q)
	}
	e.model.Push(modeltest.Turn{Text: "Added a due date too."})
	release()
	evs := events(t, run)
	// Consumed at the step boundary, with an event, and sent to the model.
	var consumed *agui.Custom
	for _, c := range find[*agui.Custom](evs) {
		if c.Name == "switchboard.followup.consumed" {
			consumed = c
		}
	}
	if consumed == nil {
		t.Fatalf("no consumed event: %v", types(evs))
	}
	if v := consumed.Value.(map[string]any); v["clientSeq"] != int64(1) || v["clientNonce"] != "n-1" {
		t.Errorf("consumed %v", v)
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	raw, _ := json.Marshal(reqs[1]["messages"])
	if !strings.Contains(string(raw), "also add a due date") {
		t.Errorf("follow-up not sent to the model: %s", raw)
	}
	if strings.Count(string(raw), "also add a due date") != 1 {
		t.Errorf("follow-up sent twice: %s", raw)
	}
	// After the run, the same pair still answers as it did.
	again, err = e.rt.FollowUp(context.Background(), "chat-f", f, agent.StartRequest{})
	if err != nil || again.RunID != run.ID() || !again.Replayed {
		t.Errorf("replay after the run: %+v %v", again, err)
	}
}

func TestFollowUpStartsARunWhenIdle(t *testing.T) {
	e := newEnv(t, nil)
	e.model.Push(modeltest.Turn{Text: "Hello."})
	res, err := e.rt.FollowUp(context.Background(), "chat-idle", switchboard.FollowUp{Text: "hi", ClientSeq: 0, ClientNonce: "a"}, agent.StartRequest{})
	if err != nil || res.Status != "started" {
		t.Fatalf("%+v %v", res, err)
	}
	run, err := e.rt.Get(res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	events(t, run)
	if run.Info().Status != switchboard.RunSucceeded {
		t.Errorf("%+v", run.Info())
	}
}

func TestFollowUpUnsupportedChangesNothing(t *testing.T) {
	e := newEnv(t, nil)
	// A chat driven by an AI SDK client has no native follow-up.
	e.model.Push(modeltest.Turn{Text: "ok"})
	run, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: "chat-ai", Harness: agent.HarnessAISDK,
		Messages: []agui.Message{{ID: "u", Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	events(t, run)
	if h := e.rt.Capabilities(context.Background(), "chat-ai"); h.NativeFollowUp || !h.AISDKOwnsHistory {
		t.Fatalf("capabilities %+v", h)
	}
	before := len(e.model.Requests())
	_, err = e.rt.FollowUp(context.Background(), "chat-ai", switchboard.FollowUp{Text: "more", ClientSeq: 1, ClientNonce: "x"}, agent.StartRequest{})
	if switchboard.CodeOf(err) != switchboard.CodeFollowupUnsupported {
		t.Fatalf("%v", err)
	}
	if len(e.model.Requests()) != before {
		t.Error("a run was started")
	}
	// The rejected seq was not recorded: the loop binding is unaffected and
	// the capability is per chat, not app-wide.
	if h := e.rt.Capabilities(context.Background(), "chat-other"); !h.NativeFollowUp || h.AISDKOwnsHistory {
		t.Errorf("another chat: %+v", h)
	}
	// A host's own binding wins.
	e2 := newEnv(t, func(o *agent.Options) {
		o.Harness = func(_ context.Context, chat string) (switchboard.Harness, bool) {
			return switchboard.Harness{Name: "external"}, chat == "ext"
		}
	})
	if _, err := e2.rt.FollowUp(context.Background(), "ext", switchboard.FollowUp{Text: "x", ClientSeq: 1, ClientNonce: "y"}, agent.StartRequest{}); switchboard.CodeOf(err) != switchboard.CodeFollowupUnsupported {
		t.Errorf("host binding: %v", err)
	}
}

func TestFollowUpRejectsBadInput(t *testing.T) {
	e := newEnv(t, nil)
	for _, f := range []switchboard.FollowUp{{Text: " ", ClientSeq: 1, ClientNonce: "a"}, {Text: "x", ClientSeq: 1}, {Text: "x", ClientSeq: -1, ClientNonce: "a"}} {
		if _, err := e.rt.FollowUp(context.Background(), "c", f, agent.StartRequest{}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Errorf("%+v: %v", f, err)
		}
	}
}

// TestSessionSwitchCancelsQueuedWork: when a tab moves to another chat, the
// queued follow-ups of the chat it left are dropped.
func TestSessionSwitchCancelsQueuedWork(t *testing.T) {
	e := newEnv(t, nil)
	runA, releaseA := busyRun(t, e, "chat-a", "tab-1")
	if _, err := e.rt.FollowUp(context.Background(), "chat-a", switchboard.FollowUp{Text: "stale", ClientSeq: 1, ClientNonce: "s"}, agent.StartRequest{}); err != nil {
		t.Fatal(err)
	}
	e.model.Push(modeltest.Turn{Text: "New chat."})
	runB, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: "chat-b", SessionID: "tab-1", Input: "new topic"})
	if err != nil {
		t.Fatal(err)
	}
	events(t, runB)
	if q := runA.Info().Queued; q != 0 {
		t.Fatalf("chat-a still has %d queued", q)
	}
	releaseA()
	evs := events(t, runA)
	var cancelled bool
	for _, c := range find[*agui.Custom](evs) {
		if c.Name == "switchboard.followup.cancelled" && strings.Contains(fmt.Sprint(c.Value), "session switched") {
			cancelled = true
		}
		if c.Name == "switchboard.followup.consumed" {
			t.Error("the stale follow-up was consumed")
		}
	}
	if !cancelled {
		t.Errorf("no cancelled event: %v", types(evs))
	}
}

func TestBusyChatRefusesASecondRun(t *testing.T) {
	e := newEnv(t, nil)
	run, _ := busyRun(t, e, "chat-busy", "")
	_, err := e.rt.Start(context.Background(), agent.StartRequest{ThreadID: "chat-busy", Input: "again"})
	if switchboard.CodeOf(err) != switchboard.CodeConflict || !strings.Contains(err.Error(), run.ID()) {
		t.Fatalf("%v", err)
	}
	run.Cancel()
	events(t, run)
}
