package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

func runRecord(id, replica string, at time.Time) switchboard.RunRecord {
	return switchboard.RunRecord{
		RunInfo: switchboard.RunInfo{RunID: id, ThreadID: "chat-" + id, SessionID: "tab-1", Status: switchboard.RunRunning,
			Harness: "loop", CreatedAt: at},
		Owner: "session:tab-1", Replica: replica,
	}
}

func runEvents(from, n int) []switchboard.RunEvent {
	out := make([]switchboard.RunEvent, n)
	for i := range out {
		out[i] = switchboard.RunEvent{Seq: from + i, JSON: fmt.Appendf(nil, `{"type":"CUSTOM","name":"e","value":%d}`, from+i)}
	}
	return out
}

// testRuns checks a run's life in the store: created running with no
// events, flushed in batches that continue the stored positions (a gap, a
// repeat or another replica's flush is a CONFLICT that writes nothing),
// read back field for field and event for event from any position, listed
// newest first, and an existing id refused unless that run is waiting (an
// interrupted run whose resume takes the id over, losing its old events).
func testRuns(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	if _, err := s.RunGet(ctx, "r1"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("get before create: %v", err)
	}
	r := runRecord("r1", "rep_a", base)
	must(t, s.RunCreate(ctx, r))
	got, err := s.RunGet(ctx, "r1")
	must(t, err)
	want := r
	want.CreatedAt = micro(base)
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Fatalf("created run (-want +got):\n%s", d)
	}
	wantCode(t, s.RunCreate(ctx, r), switchboard.CodeConflict)

	must(t, s.RunAppend(ctx, r, runEvents(0, 3)))
	cost := 0.25
	r.Status, r.Steps, r.Events = switchboard.RunWaiting, 2, 5
	r.Model = &switchboard.RunModel{Alias: "default", Provider: "openai", Model: "m1"}
	r.Usage = switchboard.RunUsage{InputTokens: 10, OutputTokens: 4, TotalTokens: 14}
	r.Cost, r.Waiting, r.FinishedAt = &cost, []string{"apr_1", "apr_2"}, base.Add(time.Second)
	r.Error = switchboard.Errorf(switchboard.CodeModelError, "the model said no")
	must(t, s.RunAppend(ctx, r, runEvents(3, 2)))
	got, err = s.RunGet(ctx, "r1")
	must(t, err)
	want = r
	want.CreatedAt, want.FinishedAt = micro(base), micro(r.FinishedAt)
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Fatalf("flushed run (-want +got):\n%s", d)
	}
	evs, err := s.RunEventList(ctx, "r1", 0, 0)
	must(t, err)
	if d := cmp.Diff(runEvents(0, 5), evs); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	evs, err = s.RunEventList(ctx, "r1", 3, 1)
	must(t, err)
	if d := cmp.Diff(runEvents(3, 1), evs); d != "" {
		t.Fatalf("events from 3, limit 1 (-want +got):\n%s", d)
	}
	// A repeat, a gap and another replica's flush change nothing.
	wantCode(t, s.RunAppend(ctx, r, runEvents(4, 1)), switchboard.CodeConflict)
	wantCode(t, s.RunAppend(ctx, r, runEvents(6, 1)), switchboard.CodeConflict)
	other := r
	other.Replica, other.Status = "rep_b", switchboard.RunFailed
	wantCode(t, s.RunAppend(ctx, other, nil), switchboard.CodeConflict)
	wantCode(t, s.RunAppend(ctx, runRecord("nope", "rep_a", base), nil), switchboard.CodeNotFound)
	wantCode(t, s.RunAppend(ctx, r, []switchboard.RunEvent{{Seq: 5, JSON: []byte(`{`)}}), switchboard.CodeInvalidInput)
	if got, _ := s.RunGet(ctx, "r1"); got.Events != 5 || got.Status != switchboard.RunWaiting {
		t.Fatalf("refused flushes changed the run: %+v", got)
	}
	if evs, _ := s.RunEventList(ctx, "r1", 0, 0); len(evs) != 5 {
		t.Fatalf("refused flushes changed the events: %d", len(evs))
	}

	// The waiting run's id is taken over by the run that resumes it.
	r2 := runRecord("r1", "rep_b", base.Add(time.Minute))
	must(t, s.RunCreate(ctx, r2))
	got, err = s.RunGet(ctx, "r1")
	must(t, err)
	if got.Replica != "rep_b" || got.Status != switchboard.RunRunning || got.Events != 0 || got.Waiting != nil {
		t.Fatalf("taken over: %+v", got)
	}
	if evs, _ := s.RunEventList(ctx, "r1", 0, 0); len(evs) != 0 {
		t.Fatalf("the replaced run's events are still there: %d", len(evs))
	}
	must(t, s.RunAppend(ctx, r2, runEvents(0, 1)))

	must(t, s.RunCreate(ctx, runRecord("r0", "rep_a", base.Add(-time.Minute))))
	must(t, s.RunCreate(ctx, runRecord("r2", "rep_a", base.Add(time.Hour))))
	list, err := s.RunList(ctx, switchboard.RunFilter{})
	must(t, err)
	var ids []string
	for _, x := range list {
		ids = append(ids, x.RunID)
	}
	if d := cmp.Diff([]string{"r2", "r1", "r0"}, ids); d != "" {
		t.Fatalf("list order (-want +got):\n%s", d)
	}
	if list, _ := s.RunList(ctx, switchboard.RunFilter{Limit: 1}); len(list) != 1 || list[0].RunID != "r2" {
		t.Fatalf("limit 1: %+v", list)
	}
	// A chat's run in progress, whichever replica holds it: by thread and
	// status (r1 runs on rep_b; r0 and r2 belong to other chats).
	ended := runRecord("r3", "rep_a", base.Add(2*time.Hour))
	ended.ThreadID = "chat-r1"
	ended.Status, ended.FinishedAt = switchboard.RunSucceeded, base.Add(3*time.Hour)
	must(t, s.RunCreate(ctx, ended))
	byThread, err := s.RunList(ctx, switchboard.RunFilter{ThreadID: "chat-r1"})
	must(t, err)
	if len(byThread) != 2 || byThread[0].RunID != "r3" || byThread[1].RunID != "r1" {
		t.Fatalf("by thread: %+v", byThread)
	}
	running, err := s.RunList(ctx, switchboard.RunFilter{ThreadID: "chat-r1", Status: switchboard.RunRunning})
	must(t, err)
	if len(running) != 1 || running[0].RunID != "r1" || running[0].Replica != "rep_b" {
		t.Fatalf("running by thread: %+v", running)
	}
	if none, _ := s.RunList(ctx, switchboard.RunFilter{ThreadID: "chat-nobody", Status: switchboard.RunRunning}); len(none) != 0 {
		t.Fatalf("a chat with no runs: %+v", none)
	}
	// A person's own runs: by whom they act for, kept as written.
	alices := runRecord("r4", "rep_a", base.Add(4*time.Hour))
	alices.User = "user:alice"
	must(t, s.RunCreate(ctx, alices))
	mine, err := s.RunList(ctx, switchboard.RunFilter{User: "user:alice"})
	must(t, err)
	if len(mine) != 1 || mine[0].RunID != "r4" || mine[0].User != "user:alice" {
		t.Fatalf("alice's runs: %+v", mine)
	}
	if got, _ := s.RunGet(ctx, "r4"); got.User != "user:alice" {
		t.Fatalf("stored run's user: %+v", got)
	}
	wantCode(t, s.RunCreate(ctx, switchboard.RunRecord{}), switchboard.CodeInvalidInput)
}

// testRunFailInFlight checks the survivor's sweep: only running runs of
// the named replicas end, each with its terminal event appended after the
// stored ones and the survivor as its replica, so the dead owner's late
// flush is refused; waiting and finished runs and other replicas' runs are
// left alone.
func testRunFailInFlight(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	dead := runRecord("dead-1", "rep_dead", base)
	must(t, s.RunCreate(ctx, dead))
	must(t, s.RunAppend(ctx, dead, runEvents(0, 2)))
	waiting := runRecord("dead-waiting", "rep_dead", base)
	must(t, s.RunCreate(ctx, waiting))
	waiting.Status, waiting.Waiting = switchboard.RunWaiting, []string{"apr_1"}
	must(t, s.RunAppend(ctx, waiting, runEvents(0, 1)))
	alive := runRecord("alive-1", "rep_alive", base)
	must(t, s.RunCreate(ctx, alive))

	cause := switchboard.Errorf(switchboard.CodeOutcomeUnknown, "its replica died")
	at := base.Add(time.Minute)
	var seen []string
	n, err := s.RunFailInFlight(ctx, []string{"rep_dead", "rep_gone"}, func(r switchboard.RunRecord) (switchboard.RunRecord, []byte) {
		seen = append(seen, r.RunID)
		r.Status, r.Error, r.FinishedAt, r.Replica = switchboard.RunFailed, cause, at, "rep_survivor"
		return r, []byte(`{"type":"RUN_ERROR","message":"its replica died","code":"OUTCOME_UNKNOWN"}`)
	})
	must(t, err)
	if n != 1 || len(seen) != 1 || seen[0] != "dead-1" {
		t.Fatalf("ended %d, visited %v; want only dead-1", n, seen)
	}
	got, err := s.RunGet(ctx, "dead-1")
	must(t, err)
	if got.Status != switchboard.RunFailed || got.Replica != "rep_survivor" || got.Events != 3 ||
		switchboard.CodeOf(got.Error) != switchboard.CodeOutcomeUnknown || !got.FinishedAt.Equal(micro(at)) {
		t.Fatalf("ended run: %+v", got)
	}
	evs, err := s.RunEventList(ctx, "dead-1", 2, 0)
	must(t, err)
	if len(evs) != 1 || evs[0].Seq != 2 || string(evs[0].JSON) != `{"type":"RUN_ERROR","message":"its replica died","code":"OUTCOME_UNKNOWN"}` {
		t.Fatalf("terminal event: %+v", evs)
	}
	wantCode(t, s.RunAppend(ctx, dead, runEvents(2, 1)), switchboard.CodeConflict) // the zombie's late flush
	for id, st := range map[string]switchboard.RunStatus{"dead-waiting": switchboard.RunWaiting, "alive-1": switchboard.RunRunning} {
		if got, _ := s.RunGet(ctx, id); got.Status != st {
			t.Errorf("%s: %s, want %s", id, got.Status, st)
		}
	}
	if n, err := s.RunFailInFlight(ctx, []string{"rep_dead"}, func(r switchboard.RunRecord) (switchboard.RunRecord, []byte) {
		t.Errorf("visited %s again", r.RunID)
		return r, []byte(`{}`)
	}); err != nil || n != 0 {
		t.Fatalf("second sweep: %d, %v", n, err)
	}
}

// testRunExpire checks run retention: finished runs older than the bound
// go with their events, oldest first and at most limit at a time; running
// and waiting runs stay whatever their age.
func testRunExpire(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	end := func(id string, st switchboard.RunStatus, at time.Time) {
		r := runRecord(id, "rep_a", base)
		must(t, s.RunCreate(ctx, r))
		r.Status, r.FinishedAt = st, at
		if st == switchboard.RunRunning {
			r.FinishedAt = time.Time{}
		}
		must(t, s.RunAppend(ctx, r, runEvents(0, 2)))
	}
	end("old-1", switchboard.RunSucceeded, base.Add(time.Minute))
	end("old-2", switchboard.RunFailed, base.Add(2*time.Minute))
	end("old-3", switchboard.RunCancelled, base.Add(3*time.Minute))
	end("old-waiting", switchboard.RunWaiting, base.Add(time.Minute))
	end("old-running", switchboard.RunRunning, time.Time{})
	end("new", switchboard.RunSucceeded, base.Add(time.Hour))
	wantCode(t, func() error { _, err := s.RunExpire(ctx, time.Time{}, 1); return err }(), switchboard.CodeInvalidInput)

	bound := base.Add(10 * time.Minute)
	n, err := s.RunExpire(ctx, bound, 2)
	must(t, err)
	if n != 2 {
		t.Fatalf("first batch deleted %d, want 2", n)
	}
	if _, err := s.RunGet(ctx, "old-1"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("old-1 (the oldest) is still there: %v", err)
	}
	if evs, _ := s.RunEventList(ctx, "old-1", 0, 0); len(evs) != 0 {
		t.Fatalf("old-1's events are still there: %d", len(evs))
	}
	n, err = s.RunExpire(ctx, bound, 10)
	must(t, err)
	if n != 1 {
		t.Fatalf("second batch deleted %d, want 1", n)
	}
	for _, id := range []string{"old-waiting", "old-running", "new"} {
		if _, err := s.RunGet(ctx, id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
		if evs, _ := s.RunEventList(ctx, id, 0, 0); len(evs) != 2 {
			t.Errorf("%s: %d events left, want 2", id, len(evs))
		}
	}
}

// testRunOneRunningPerChat: a chat has one running run in the store,
// whichever replicas start them. A second running run of a chat is refused
// with CONFLICT naming the first and stores nothing; once the running one
// ended the chat's next run is taken. (Replicas racing to start one chat:
// postgres.TestRunStartsRace.)
func testRunOneRunningPerChat(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	chat := func(id, replica, thread string) switchboard.RunRecord {
		r := runRecord(id, replica, base)
		r.ThreadID = thread
		return r
	}
	first := chat("busy-1", "rep_a", "chat-busy")
	must(t, s.RunCreate(ctx, first))
	err := s.RunCreate(ctx, chat("busy-2", "rep_b", "chat-busy"))
	wantCode(t, err, switchboard.CodeConflict)
	if d, _ := switchboard.AsError(err).Details.(map[string]any); d["runId"] != "busy-1" {
		t.Fatalf("the refusal names %v: %v", d, err)
	}
	if _, err := s.RunGet(ctx, "busy-2"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("the refused run was stored: %v", err)
	}
	first.Status, first.FinishedAt = switchboard.RunSucceeded, base.Add(time.Second)
	must(t, s.RunAppend(ctx, first, runEvents(0, 1)))
	must(t, s.RunCreate(ctx, chat("busy-3", "rep_b", "chat-busy")))
}
