package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// hitlEnv is an env whose broker asks the real approval service, and
// whose runtime interrupts with it.
type hitlEnv struct {
	*env
	approvals *approval.Service
	ran       atomic.Int32
	lastArgs  atomic.Value
	clock     atomic.Int64 // added to the wall clock, in seconds
}

func newHITL(t *testing.T) *hitlEnv {
	t.Helper()
	h := &hitlEnv{}
	now := func() time.Time { return time.Now().Add(time.Duration(h.clock.Load()) * time.Second) }
	h.env = newEnvWith(t, func(st *sqlite.Store, bo *broker.Options) {
		svc, err := approval.New(approval.Options{Store: st, Now: now, PollInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		h.approvals = svc
		bo.Policy = svc
	}, func(o *agent.Options) {
		o.Approvals = h.approvals
		o.Now = now
	})
	h.addFunc(t, "tasks.create", switchboard.ClassMutate, taskSchema, func(_ context.Context, in json.RawMessage) (any, error) {
		h.ran.Add(1)
		h.lastArgs.Store(string(in))
		return map[string]any{"id": "t1"}, nil
	})
	return h
}

// user is the context of the person answering interrupts.
func user() context.Context {
	return switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "alice"})
}

// interrupted starts a run that calls tasks.create and returns its
// interrupt, checking the run ended with it and ran nothing.
func (h *hitlEnv) interrupted(t *testing.T, thread string) (*agent.Run, agui.Interrupt, []agui.Message) {
	t.Helper()
	h.model.Push(modeltest.Turn{Text: "Creating it.", ToolCalls: []modeltest.Call{{ID: "call_a", Name: "tasks_create", Args: `{"projectId":"p1","title":"Ship it"}`}}})
	run, err := h.rt.Start(user(), agent.StartRequest{ThreadID: thread, Messages: []agui.Message{{ID: "u1", Role: agui.RoleUser, Content: "make a task"}}, Interrupts: true})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, run)
	fin, ok := last(evs).(*agui.RunFinished)
	if !ok || fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeInterrupt || len(fin.Outcome.Interrupts) != 1 {
		t.Fatalf("run did not end interrupted: %s", dump(recsOf(run)))
	}
	in := fin.Outcome.Interrupts[0]
	starts := find[*agui.ToolCallStart](evs)
	if in.Reason != agent.ReasonToolApproval || !strings.HasPrefix(in.ID, "apr_") || in.ToolCallID != starts[0].ToolCallID ||
		in.ExpiresAt == "" || len(in.ResponseSchema) == 0 || !strings.Contains(in.Message, "tasks.create") {
		t.Fatalf("interrupt %+v", in)
	}
	if run.Info().Status != switchboard.RunWaiting || h.ran.Load() != 0 {
		t.Fatalf("status %s, tool ran %d times before approval", run.Info().Status, h.ran.Load())
	}
	snaps := find[*agui.MessagesSnapshot](evs)
	return run, in, snaps[len(snaps)-1].Messages
}

func recsOf(run *agent.Run) []agent.Record {
	recs, _, _ := run.Events(0)
	return recs
}

func payload(v map[string]any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// TestInterruptApproveContinuesTheWaitingCall: approving in the resume
// runs the call that waited, once, and the model takes the next step —
// no re-planning (two model requests in all), the same approval record
// decided through the AG-UI channel.
func TestInterruptApproveContinuesTheWaitingCall(t *testing.T) {
	h := newHITL(t)
	_, in, msgs := h.interrupted(t, "chat-a")
	h.model.Push(modeltest.Turn{Text: "Created t1."})
	run2, err := h.rt.Start(user(), agent.StartRequest{ThreadID: "chat-a", Messages: msgs, Interrupts: true,
		Resume: []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: payload(map[string]any{"approved": true})}}})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, run2)
	res := find[*agui.ToolCallResult](evs)
	if len(res) != 1 || res[0].ToolCallID != in.ToolCallID || res[0].IsError || !strings.Contains(res[0].Content, `"t1"`) {
		t.Fatalf("results %+v", res)
	}
	if fin := last(evs).(*agui.RunFinished); fin.Outcome != nil {
		t.Fatalf("finish %+v", fin.Outcome)
	}
	if h.ran.Load() != 1 || len(h.model.Requests()) != 2 {
		t.Fatalf("tool ran %d times, %d model requests", h.ran.Load(), len(h.model.Requests()))
	}
	a, _ := h.approvals.Get(context.Background(), in.ID)
	if a.Status != switchboard.ApprovalApproved || a.DecidedBy != "user:alice" || a.Channel != approval.ChannelAGUI || a.ConsumedAt.IsZero() {
		t.Fatalf("approval %+v", a)
	}
	// The model's second request answers the call it made.
	raw, _ := json.Marshal(h.model.Requests()[1]["messages"])
	if !strings.Contains(string(raw), `"tool_call_id"`) {
		t.Errorf("second request lacks the result: %s", raw)
	}
	// Answered once: the same resume again is refused, nothing changes.
	_, err = h.rt.Start(user(), agent.StartRequest{ThreadID: "chat-a", Interrupts: true,
		Resume: []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: payload(map[string]any{"approved": true})}}})
	if switchboard.CodeOf(err) != switchboard.CodeConflict || !strings.Contains(err.Error(), "already approved") {
		t.Fatalf("second resume: %v", err)
	}
	if h.ran.Load() != 1 {
		t.Fatal("a second resume ran the tool again")
	}
}

// TestInterruptResumeUnderTheSameRunID is CopilotKit's resume: the new run
// carries the interrupted run's own id.
func TestInterruptResumeUnderTheSameRunID(t *testing.T) {
	h := newHITL(t)
	run1, in, msgs := h.interrupted(t, "chat-ck")
	h.model.Push(modeltest.Turn{Text: "Created."})
	run2, err := h.rt.Start(user(), agent.StartRequest{RunID: run1.ID(), ThreadID: "chat-ck", Messages: msgs, Interrupts: true,
		Resume: []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: payload(map[string]any{"approved": true})}}})
	if err != nil {
		t.Fatal(err)
	}
	events(t, run2)
	if got, _ := h.rt.Get(run1.ID()); got != run2 || h.ran.Load() != 1 {
		t.Fatalf("run id not taken over (%v) or tool ran %d", got == run2, h.ran.Load())
	}
	// A run id taken by a run that is not the interrupted one still conflicts.
	if _, err := h.rt.Start(user(), agent.StartRequest{RunID: run1.ID(), ThreadID: "chat-ck", Input: "hi"}); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("reused id: %v", err)
	}
}

// TestInterruptDenyAndCancel: a denial reaches the model as USER_DENIED
// and the tool never runs; a cancelled entry ends the run cancelled.
func TestInterruptDenyAndCancel(t *testing.T) {
	h := newHITL(t)
	_, in, msgs := h.interrupted(t, "chat-d")
	h.model.Push(modeltest.Turn{Text: "OK, not creating it."})
	run, err := h.rt.Start(user(), agent.StartRequest{ThreadID: "chat-d", Messages: msgs, Interrupts: true,
		Resume: []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: payload(map[string]any{"approved": false, "reason": "wrong project"})}}})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, run)
	res := find[*agui.ToolCallResult](evs)
	if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content, "USER_DENIED") || !strings.Contains(res[0].Content, "wrong project") {
		t.Fatalf("results %+v", res)
	}
	if h.ran.Load() != 0 {
		t.Fatal("a denied call ran")
	}

	_, in2, msgs2 := h.interrupted(t, "chat-c")
	run2, err := h.rt.Start(user(), agent.StartRequest{ThreadID: "chat-c", Messages: msgs2, Interrupts: true,
		Resume: []agui.ResumeEntry{{InterruptID: in2.ID, Status: "cancelled"}}})
	if err != nil {
		t.Fatal(err)
	}
	evs = events(t, run2)
	if fin := last(evs).(*agui.RunFinished); fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeCancelled {
		t.Fatalf("cancelled resume finished %+v", fin.Outcome)
	}
	if run2.Info().Status != switchboard.RunCancelled || h.ran.Load() != 0 || len(h.model.Requests()) != 3 {
		t.Fatalf("status %s ran %d requests %d", run2.Info().Status, h.ran.Load(), len(h.model.Requests()))
	}
}

// TestInterruptApproveWithEdits: the edited arguments are checked against
// the tool's schema (refused with the pointer, nothing decided), then run
// once under an approval bound to them.
func TestInterruptApproveWithEdits(t *testing.T) {
	h := newHITL(t)
	_, in, msgs := h.interrupted(t, "chat-e")
	bad := []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: payload(map[string]any{"approved": true, "editedArgs": map[string]any{"projectId": 7, "title": "x"}})}}
	_, err := h.rt.Start(user(), agent.StartRequest{ThreadID: "chat-e", Messages: msgs, Interrupts: true, Resume: bad})
	e := switchboard.AsError(err)
	d, _ := e.Details.(map[string]any)
	if e.Code != switchboard.CodeSchemaViolation || d["pointer"] != "/resume/0/payload/editedArgs/projectId" {
		t.Fatalf("bad edit: %v %+v", err, e.Details)
	}
	if a, _ := h.approvals.Get(context.Background(), in.ID); a.Status != switchboard.ApprovalPending {
		t.Fatalf("a refused resume decided the approval: %s", a.Status)
	}

	h.model.Push(modeltest.Turn{Text: "Created with your title."})
	good := []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: payload(map[string]any{"approved": true, "editedArgs": map[string]any{"projectId": "p1", "title": "Ship it today"}})}}
	run, err := h.rt.Start(user(), agent.StartRequest{ThreadID: "chat-e", Messages: msgs, Interrupts: true, Resume: good})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, run)
	if h.ran.Load() != 1 || !strings.Contains(h.lastArgs.Load().(string), "Ship it today") {
		t.Fatalf("ran %d with %v", h.ran.Load(), h.lastArgs.Load())
	}
	res := find[*agui.ToolCallResult](evs)
	sb := res[0].Metadata["switchboard"].(map[string]any)
	if res[0].IsError || sb["editedFrom"] != in.ID {
		t.Fatalf("result %+v", res[0])
	}
	edited, _ := h.approvals.Get(context.Background(), sb["approvalId"].(string))
	if edited.Status != switchboard.ApprovalApproved || edited.ArgsHash != approval.ArgsHash(json.RawMessage(`{"projectId":"p1","title":"Ship it today"}`)) || edited.DecidedBy != "user:alice" {
		t.Fatalf("edited call's approval %+v", edited)
	}
	orig, _ := h.approvals.Get(context.Background(), in.ID)
	if orig.Status != switchboard.ApprovalDenied || !strings.Contains(orig.Reason, "edited arguments") {
		t.Fatalf("original approval %+v", orig)
	}
	// The conversation the model saw next has the edited arguments.
	raw, _ := json.Marshal(h.model.Requests()[1]["messages"])
	if !strings.Contains(string(raw), "Ship it today") {
		t.Errorf("model did not see the edit: %s", raw)
	}
}

// TestInterruptBadResumes: every refusal leaves the approval pending and
// the tool unrun.
func TestInterruptBadResumes(t *testing.T) {
	h := newHITL(t)
	_, in, msgs := h.interrupted(t, "chat-b")
	_, other, _ := h.interrupted(t, "chat-other")
	yes := payload(map[string]any{"approved": true})
	cases := []struct {
		name   string
		resume []agui.ResumeEntry
		code   switchboard.Code
		msg    string
	}{
		{"unknown", []agui.ResumeEntry{{InterruptID: "apr_nope", Status: "resolved", Payload: yes}}, switchboard.CodeNotFound, "no open interrupt apr_nope"},
		{"another chat's", []agui.ResumeEntry{{InterruptID: other.ID, Status: "resolved", Payload: yes}}, switchboard.CodeForbidden, "another chat"},
		{"another tool call", []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: payload(map[string]any{"approved": true, "toolCallId": "tc_other"})}}, switchboard.CodeForbidden, "tool call tc_other"},
		{"no payload", []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved"}}, switchboard.CodeInvalidInput, "payload must be"},
		{"twice", []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: yes}, {InterruptID: in.ID, Status: "cancelled"}}, switchboard.CodeInvalidInput, "second time"},
		{"edits with a denial", []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: payload(map[string]any{"approved": false, "editedArgs": map[string]any{}})}}, switchboard.CodeInvalidInput, "edits come with an approval"},
	}
	for _, c := range cases {
		_, err := h.rt.Start(user(), agent.StartRequest{ThreadID: "chat-b", Messages: msgs, Interrupts: true, Resume: c.resume})
		if switchboard.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	for _, id := range []string{in.ID, other.ID} {
		if a, _ := h.approvals.Get(context.Background(), id); a.Status != switchboard.ApprovalPending {
			t.Fatalf("a refused resume changed %s: %s", id, a.Status)
		}
	}
	// Expired: refused, not run.
	h.clock.Store(int64(approval.DefaultTTL/time.Second) + 60)
	_, err := h.rt.Start(user(), agent.StartRequest{ThreadID: "chat-b", Messages: msgs, Interrupts: true, Resume: []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: yes}}})
	if switchboard.CodeOf(err) != switchboard.CodeConflict || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired: %v", err)
	}
	if h.ran.Load() != 0 {
		t.Fatal("a refused resume ran the tool")
	}
}

// TestInterruptDecidedElsewhere: the console decides first; the resume is
// refused with who decided, and a run without resume continues with the
// call's real outcome.
func TestInterruptDecidedElsewhere(t *testing.T) {
	h := newHITL(t)
	_, in, msgs := h.interrupted(t, "chat-x")
	if _, err := h.approvals.Decide(context.Background(), in.ID, approval.Decision{By: switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}, Approve: true, Channel: approval.ChannelHTTP}); err != nil {
		t.Fatal(err)
	}
	_, err := h.rt.Start(user(), agent.StartRequest{ThreadID: "chat-x", Messages: msgs, Interrupts: true,
		Resume: []agui.ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: payload(map[string]any{"approved": false})}}})
	if switchboard.CodeOf(err) != switchboard.CodeConflict || !strings.Contains(err.Error(), "by user:admin via http") {
		t.Fatalf("resume after the console: %v", err)
	}
	h.model.Push(modeltest.Turn{Text: "Done."})
	run, err := h.rt.Start(user(), agent.StartRequest{ThreadID: "chat-x", Messages: msgs, Interrupts: true})
	if err != nil {
		t.Fatal(err)
	}
	res := find[*agui.ToolCallResult](events(t, run))
	if len(res) != 1 || res[0].IsError || h.ran.Load() != 1 {
		t.Fatalf("results %+v ran %d", res, h.ran.Load())
	}
}

// TestInterruptedRunCancelled: cancelling the interrupted run cancels the
// approval it waits for; the call never runs.
func TestInterruptedRunCancelled(t *testing.T) {
	h := newHITL(t)
	run, in, _ := h.interrupted(t, "chat-s")
	run.Stop()
	if run.Info().Status != switchboard.RunCancelled {
		t.Fatalf("status %s", run.Info().Status)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		a, _ := h.approvals.Get(context.Background(), in.ID)
		if a.Status == switchboard.ApprovalCancelled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("approval still %s", a.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h.ran.Load() != 0 {
		t.Fatal("the cancelled call ran")
	}
}
