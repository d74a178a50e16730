package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

// agentRecord is a live session record started at base+offset.
func agentRecord(id, replica string, offset time.Duration) switchboard.AgentRecord {
	p := 0.25
	return switchboard.AgentRecord{
		Session: switchboard.AgentSession{ID: id, Kind: switchboard.AgentExternal, Label: "bot " + id, Principal: "agent:bot",
			Scope: &switchboard.AgentScope{Allow: []string{"deck.*"}}, Transport: "host", Status: switchboard.AgentRunning,
			Task: "exporting", Progress: &p, SessionID: "ses_1", StartedAt: base.Add(offset), LastSeen: base.Add(offset)},
		User: "user:alice", Replica: replica, Heartbeat: true,
	}
}

// wantRecord is r as a store returns it.
func wantRecord(r switchboard.AgentRecord) switchboard.AgentRecord {
	r.Session.StartedAt, r.Session.LastSeen, r.Session.EndedAt = micro(r.Session.StartedAt), micro(r.Session.LastSeen), micro(r.Session.EndedAt)
	return r
}

// testAgents: a record round-trips whole; a replace updates it but never
// moves LastSeen back; an ended record is final (CONFLICT); lists filter
// by liveness and owner, newest first; a touch moves LastSeen forward
// only on a live record; prune keeps live records and the newest ended.
func testAgents(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	a := agentRecord("agt_a", "rep_1", 0)
	b := agentRecord("agt_b", "rep_2", time.Second)
	b.Heartbeat, b.User, b.Session.Scope, b.Session.Progress = false, "user:admin", nil, nil
	must(t, s.AgentPut(ctx, a))
	must(t, s.AgentPut(ctx, b))
	got, err := s.AgentGet(ctx, "agt_a")
	must(t, err)
	if d := cmp.Diff(wantRecord(a), got, cmpOpts...); d != "" {
		t.Fatalf("AgentGet (-want +got):\n%s", d)
	}
	_, err = s.AgentGet(ctx, "nope")
	wantCode(t, err, switchboard.CodeNotFound)

	// A heartbeat on another replica, then the owner's write of an older
	// LastSeen: the later one stays.
	got, err = s.AgentTouch(ctx, "agt_a", base.Add(time.Minute))
	must(t, err)
	if !got.Session.LastSeen.Equal(micro(base.Add(time.Minute))) {
		t.Fatalf("touched: last seen %v", got.Session.LastSeen)
	}
	got, err = s.AgentTouch(ctx, "agt_a", base.Add(time.Second)) // late, out of order
	must(t, err)
	if !got.Session.LastSeen.Equal(micro(base.Add(time.Minute))) {
		t.Fatalf("a late touch moved last seen back to %v", got.Session.LastSeen)
	}
	a.Session.Status, a.Session.Task = switchboard.AgentWaitingApproval, "waiting for deck.export"
	a.Session.LastSeen = base.Add(2 * time.Second)
	must(t, s.AgentPut(ctx, a))
	got, err = s.AgentGet(ctx, "agt_a")
	must(t, err)
	want := wantRecord(a)
	want.Session.LastSeen = micro(base.Add(time.Minute))
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Fatalf("after a replace (-want +got):\n%s", d)
	}

	list, err := s.AgentList(ctx, switchboard.AgentFilter{})
	must(t, err)
	if len(list) != 2 || list[0].Session.ID != "agt_b" || list[1].Session.ID != "agt_a" {
		t.Fatalf("AgentList: %+v", list)
	}
	list, err = s.AgentList(ctx, switchboard.AgentFilter{Active: true, Replicas: []string{"rep_1", "rep_9"}})
	must(t, err)
	if len(list) != 1 || list[0].Session.ID != "agt_a" {
		t.Fatalf("AgentList of rep_1: %+v", list)
	}

	// An end is final: a later write of any state is refused.
	end := a
	end.Session.Status, end.Session.Reason = switchboard.AgentCancelled, "its replica died"
	end.Session.EndedAt = base.Add(3 * time.Minute)
	must(t, s.AgentPut(ctx, end))
	late := a
	late.Session.Task = "a late write of its owner"
	wantCode(t, s.AgentPut(ctx, late), switchboard.CodeConflict)
	wantCode(t, s.AgentPut(ctx, end), switchboard.CodeConflict)
	got, err = s.AgentTouch(ctx, "agt_a", base.Add(time.Hour))
	wantCode(t, err, switchboard.CodeConflict)
	if got.Session.Status != switchboard.AgentCancelled || got.Session.Reason != "its replica died" ||
		!got.Session.EndedAt.Equal(micro(end.Session.EndedAt)) {
		t.Fatalf("a touch of an ended record returned %+v", got.Session)
	}
	_, err = s.AgentTouch(ctx, "nope", base)
	wantCode(t, err, switchboard.CodeNotFound)
	list, err = s.AgentList(ctx, switchboard.AgentFilter{Active: true})
	must(t, err)
	if len(list) != 1 || list[0].Session.ID != "agt_b" {
		t.Fatalf("active after an end: %+v", list)
	}

	// Bad records write nothing.
	bad := agentRecord("agt_bad", "rep_1", 0)
	bad.Session.Status = switchboard.AgentDone // ended without an end time
	wantCode(t, s.AgentPut(ctx, bad), switchboard.CodeInvalidInput)
	wantCode(t, s.AgentPut(ctx, switchboard.AgentRecord{}), switchboard.CodeInvalidInput)
	_, err = s.AgentGet(ctx, "agt_bad")
	wantCode(t, err, switchboard.CodeNotFound)

	// Prune keeps live records and the newest ended ones.
	for i, id := range []string{"agt_c", "agt_d", "agt_e"} {
		r := agentRecord(id, "rep_1", time.Duration(i+5)*time.Second)
		r.Session.Status, r.Session.EndedAt = switchboard.AgentDone, base.Add(time.Duration(i+10)*time.Minute)
		must(t, s.AgentPut(ctx, r))
	}
	n, err := s.AgentPrune(ctx, 2)
	must(t, err)
	if n != 2 { // agt_a and agt_c, the oldest ends
		t.Fatalf("pruned %d, want 2", n)
	}
	list, err = s.AgentList(ctx, switchboard.AgentFilter{})
	must(t, err)
	var ids []string
	for _, r := range list {
		ids = append(ids, r.Session.ID)
	}
	if d := cmp.Diff([]string{"agt_e", "agt_d", "agt_b"}, ids); d != "" {
		t.Fatalf("after prune (-want +got):\n%s", d)
	}
}

// testAgentEndRace: a survivor's end and the owner's concurrent writes
// race; exactly one end is stored, and no write after it changes it.
func testAgentEndRace(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	r := agentRecord("agt_race", "rep_1", 0)
	must(t, s.AgentPut(ctx, r))
	const n = 8
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		winner []string
	)
	for i := range n {
		wg.Go(func() {
			e := r
			e.Session.Status, e.Session.Reason = switchboard.AgentCancelled, "end "+string(rune('a'+i))
			e.Session.EndedAt = base.Add(time.Minute)
			if i%2 == 1 { // the owner's progress writes interleave
				p := r
				p.Session.Task = "step"
				_ = s.AgentPut(ctx, p)
			}
			err := s.AgentPut(ctx, e)
			if err == nil {
				mu.Lock()
				winner = append(winner, e.Session.Reason)
				mu.Unlock()
				return
			}
			if switchboard.CodeOf(err) != switchboard.CodeConflict {
				t.Errorf("end: %v", err)
			}
		})
	}
	wg.Wait()
	if len(winner) != 1 {
		t.Fatalf("%d ends were stored, want exactly one: %v", len(winner), winner)
	}
	got, err := s.AgentGet(ctx, "agt_race")
	must(t, err)
	if got.Session.Reason != winner[0] || got.Session.Status != switchboard.AgentCancelled {
		t.Fatalf("stored %+v, the winning end was %q", got.Session, winner[0])
	}
}

// testAgentAdopt: an external agent's key names one live session. The
// first AgentAdopt stores its record; another replica's, under the same
// key, gets that stored session back (adopted) and writes nothing; once it
// ended, the key is free and the next one is stored.
func testAgentAdopt(t *testing.T, s switchboard.Store) {
	ad, ok := s.(interface {
		AgentAdopt(ctx context.Context, r switchboard.AgentRecord, key string) (switchboard.AgentRecord, bool, error)
	})
	if !ok {
		t.Skip("the store does not keep agent keys")
	}
	ctx := context.Background()
	first := agentRecord("agt_k1", "rep_1", 0)
	got, adopted, err := ad.AgentAdopt(ctx, first, "key-1")
	must(t, err)
	if adopted || got.Session.ID != "agt_k1" {
		t.Fatalf("the first adopt: %s adopted %v", got.Session.ID, adopted)
	}
	got, adopted, err = ad.AgentAdopt(ctx, agentRecord("agt_k2", "rep_2", time.Second), "key-1")
	must(t, err)
	if !adopted || got.Session.ID != "agt_k1" || got.Replica != "rep_1" {
		t.Fatalf("another replica's adopt: %s (%s) adopted %v, want agt_k1 of rep_1", got.Session.ID, got.Replica, adopted)
	}
	if _, err := s.AgentGet(ctx, "agt_k2"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("the adopting replica's record was stored: %v", err)
	}
	if got, adopted, err := ad.AgentAdopt(ctx, agentRecord("agt_k3", "rep_2", 0), "key-2"); err != nil || adopted || got.Session.ID != "agt_k3" {
		t.Fatalf("another key: %s adopted %v (%v)", got.Session.ID, adopted, err)
	}
	first.Session.Status, first.Session.EndedAt = switchboard.AgentDone, base.Add(time.Minute)
	must(t, s.AgentPut(ctx, first))
	got, adopted, err = ad.AgentAdopt(ctx, agentRecord("agt_k4", "rep_2", 2*time.Second), "key-1")
	must(t, err)
	if adopted || got.Session.ID != "agt_k4" {
		t.Fatalf("after the holder ended: %s adopted %v, want agt_k4 stored", got.Session.ID, adopted)
	}
}
