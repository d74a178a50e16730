package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

// testReplicas: a replica registers, heartbeats (beats count), stops and
// is listed oldest first; a claim compares beats and succeeds once; a
// claimed replica's heartbeat is refused; a resolved replica is deleted.
func testReplicas(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	a := switchboard.Replica{ID: "rep_a", Name: "host-1/127.0.0.1:7766", Addr: "127.0.0.1:7766", Host: "host-1", StartedAt: base, TimeoutMs: 30_000, PresenceLock: true}
	b := switchboard.Replica{ID: "rep_b", Name: "host-2/127.0.0.1:7766", StartedAt: base.Add(time.Second)}
	must(t, s.ReplicaRegister(ctx, b))
	must(t, s.ReplicaRegister(ctx, a))
	wantCode(t, s.ReplicaRegister(ctx, a), switchboard.CodeConflict)
	wantCode(t, s.ReplicaRegister(ctx, switchboard.Replica{ID: "rep_c"}), switchboard.CodeInvalidInput)

	got, err := s.ReplicaHeartbeat(ctx, "rep_a", base.Add(2*time.Second))
	must(t, err)
	if got.Beats != 1 || !got.HeartbeatAt.Equal(micro(base.Add(2*time.Second))) {
		t.Fatalf("after one heartbeat: %+v", got)
	}
	got, err = s.ReplicaHeartbeat(ctx, "rep_a", base.Add(3*time.Second))
	must(t, err)
	if got.Beats != 2 {
		t.Fatalf("after two heartbeats: beats %d", got.Beats)
	}
	_, err = s.ReplicaHeartbeat(ctx, "nope", base)
	wantCode(t, err, switchboard.CodeNotFound)

	list, err := s.ReplicaList(ctx)
	must(t, err)
	want := []switchboard.Replica{
		{ID: "rep_a", Name: a.Name, Addr: a.Addr, Host: a.Host, Beats: 2, StartedAt: micro(base), HeartbeatAt: micro(base.Add(3 * time.Second)), TimeoutMs: 30_000, PresenceLock: true},
		{ID: "rep_b", Name: b.Name, StartedAt: micro(b.StartedAt), HeartbeatAt: micro(b.StartedAt)},
	}
	if d := cmp.Diff(want, list, cmpOpts...); d != "" {
		t.Fatalf("ReplicaList (-want +got):\n%s", d)
	}

	// A claim against beats the replica has moved past changes nothing.
	got, err = s.ReplicaClaim(ctx, "rep_a", "rep_b", 1, base.Add(time.Minute))
	wantCode(t, err, switchboard.CodeConflict)
	if got.ClaimedBy != "" || got.Beats != 2 {
		t.Fatalf("a stale claim returned %+v", got)
	}
	_, err = s.ReplicaClaim(ctx, "nope", "rep_b", 0, base)
	wantCode(t, err, switchboard.CodeNotFound)
	got, err = s.ReplicaClaim(ctx, "rep_a", "rep_b", 2, base.Add(time.Minute))
	must(t, err)
	if got.ClaimedBy != "rep_b" || !got.ClaimedAt.Equal(micro(base.Add(time.Minute))) {
		t.Fatalf("claimed: %+v", got)
	}
	got, err = s.ReplicaHeartbeat(ctx, "rep_a", base.Add(2*time.Minute))
	wantCode(t, err, switchboard.CodeConflict)
	if got.ClaimedBy != "rep_b" || got.Beats != 2 {
		t.Fatalf("a claimed replica's heartbeat returned %+v", got)
	}
	_, err = s.ReplicaClaim(ctx, "rep_a", "rep_c", 2, base.Add(time.Minute))
	wantCode(t, err, switchboard.CodeConflict)

	must(t, s.ReplicaStop(ctx, "rep_b", base.Add(time.Hour)))
	wantCode(t, s.ReplicaStop(ctx, "nope", base), switchboard.CodeNotFound)
	must(t, s.ReplicaDelete(ctx, "rep_a"))
	wantCode(t, s.ReplicaDelete(ctx, "rep_a"), switchboard.CodeNotFound)
	list, err = s.ReplicaList(ctx)
	must(t, err)
	if len(list) != 1 || list[0].ID != "rep_b" || !list[0].StoppedAt.Equal(micro(base.Add(time.Hour))) {
		t.Fatalf("after stop and delete: %+v", list)
	}
}

// testReplicaClaimRace: survivors claiming one dead replica at once;
// exactly one wins.
func testReplicaClaimRace(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	must(t, s.ReplicaRegister(ctx, switchboard.Replica{ID: "dead", Name: "dead", StartedAt: base}))
	const survivors = 8
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		won []string
	)
	for i := range survivors {
		wg.Go(func() {
			by := string(rune('a' + i))
			got, err := s.ReplicaClaim(ctx, "dead", by, 0, base)
			switch switchboard.CodeOf(err) {
			case "":
				mu.Lock()
				won = append(won, by)
				mu.Unlock()
			case switchboard.CodeConflict:
				if got.ClaimedBy == "" {
					t.Errorf("a lost claim returned an unclaimed replica: %+v", got)
				}
			default:
				t.Errorf("claim by %s: %v", by, err)
			}
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d survivors won the claim (%v), want exactly one", len(won), won)
	}
}

// testReplicaOwnership: invocations, sessions and jobs keep the replica
// that owns them; JobFailRunning fails only the named replicas' jobs;
// InvocationAdopt moves only in-flight calls of one replica.
func testReplicaOwnership(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	for i, r := range []string{"rep_a", "rep_a", "rep_b"} {
		inv := invocation(string(rune('x'+i)), switchboard.StatusAwaitingApproval)
		inv.Replica = r
		must(t, s.InvocationCreate(ctx, inv))
	}
	done := invocation("w", switchboard.StatusSucceeded)
	done.Replica = "rep_a"
	must(t, s.InvocationCreate(ctx, done))
	got, err := s.InvocationGet(ctx, "x")
	must(t, err)
	if got.Replica != "rep_a" {
		t.Fatalf("invocation replica: %q", got.Replica)
	}
	n, err := s.InvocationAdopt(ctx, "rep_a", "rep_c")
	must(t, err)
	if n != 2 {
		t.Fatalf("adopted %d invocations, want the 2 in flight", n)
	}
	for id, want := range map[string]string{"x": "rep_c", "y": "rep_c", "z": "rep_b", "w": "rep_a"} {
		got, err := s.InvocationGet(ctx, id)
		must(t, err)
		if got.Replica != want {
			t.Errorf("invocation %s: replica %q, want %q", id, got.Replica, want)
		}
	}

	must(t, s.SessionCreate(ctx, switchboard.Session{ID: "sess", TokenHash: "h", Replica: "rep_b", CreatedAt: base}))
	sess, err := s.SessionGet(ctx, "sess")
	must(t, err)
	if sess.Replica != "rep_b" {
		t.Fatalf("session replica: %q", sess.Replica)
	}

	for _, j := range []switchboard.Job{
		{ID: "j1", Tool: "t", Status: switchboard.JobRunning, Replica: "rep_a", CreatedAt: base},
		{ID: "j2", Tool: "t", Status: switchboard.JobRunning, Replica: "rep_b", CreatedAt: base},
		{ID: "j3", Tool: "t", Status: switchboard.JobRunning, CreatedAt: base},
	} {
		must(t, s.JobCreate(ctx, j))
	}
	cause := switchboard.Errorf(switchboard.CodeInternal, "replica died")
	n, err = s.JobFailRunning(ctx, base.Add(time.Hour), cause, "rep_a", "")
	must(t, err)
	if n != 2 {
		t.Fatalf("failed %d jobs of rep_a and the unowned, want 2", n)
	}
	for id, want := range map[string]switchboard.JobStatus{"j1": switchboard.JobFailed, "j2": switchboard.JobRunning, "j3": switchboard.JobFailed} {
		j, err := s.JobGet(ctx, id)
		must(t, err)
		if j.Status != want {
			t.Errorf("job %s: %s, want %s", id, j.Status, want)
		}
	}
	j, err := s.JobGet(ctx, "j2")
	must(t, err)
	if j.Replica != "rep_b" {
		t.Fatalf("job replica: %q", j.Replica)
	}
}
