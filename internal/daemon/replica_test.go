package daemon_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// The start-up sweep is per replica (issue 16 item 3), on SQLite and on
// Postgres: a replica's start leaves another live replica's calls alone;
// a restart under the same name resolves its previous start's calls at
// once; a survivor claims a replica whose heartbeat stopped and resolves
// its calls to the same definite state.
func TestSweepIsPerReplica(t *testing.T) {
	for _, d := range durables(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			start := func(name string, o daemon.ReplicaOptions) (*daemon.Daemon, switchboard.Store) {
				st := d.open(t)
				o.Name = name
				dm, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: "tok", Replicas: o})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { dm.Close(); st.Close() })
				return dm, st
			}
			inFlight := func(st switchboard.Store, id, owner string) {
				now := time.Now()
				if err := st.InvocationCreate(ctx, switchboard.Invocation{ID: id, Tool: "t.x", Surface: switchboard.SurfaceAPI,
					Status: switchboard.StatusDispatched, Replica: owner, CreatedAt: now, UpdatedAt: now}); err != nil {
					t.Fatal(err)
				}
			}
			status := func(st switchboard.Store, id string) switchboard.Invocation {
				inv, err := st.InvocationGet(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return inv
			}

			// Each replica records its own timeout and a survivor waits
			// for the longer of its own and the other's, so every replica
			// here beats fast: b takes a dead a over after 2 s.
			fast := daemon.ReplicaOptions{Heartbeat: 20 * time.Millisecond, Timeout: 2 * time.Second}
			a, sta := start("a", fast)
			inFlight(sta, "inv-a", a.ReplicaID())
			b, stb := start("b", fast)
			inFlight(stb, "inv-b", b.ReplicaID())
			if got := status(stb, "inv-a"); got.Status != switchboard.StatusDispatched {
				t.Fatalf("another replica's start touched a live replica's call: %+v", got)
			}

			// A crash of "a" (no clean stop) and its restart: the previous
			// start's call is resolved before the new one serves.
			a.Close()
			sta.Close() // a dead process's sessions end: its presence lock is free
			a2, sta2 := start("a", fast)
			if got := status(sta2, "inv-a"); got.Status != switchboard.StatusFailed || got.Error == nil || got.Error.Code != switchboard.CodeOutcomeUnknown {
				t.Fatalf("a restart under the same name left its call %s %+v, want failed OUTCOME_UNKNOWN", got.Status, got.Error)
			}
			if got := status(sta2, "inv-b"); got.Status != switchboard.StatusDispatched {
				t.Fatalf("a restart touched another live replica's call: %+v", got)
			}

			// "a" dies again, with a call in flight; "b" notices the
			// heartbeat stopped and resolves it.
			inFlight(sta2, "inv-a2", a2.ReplicaID())
			a2.Close()
			deadline := time.Now().Add(30 * time.Second)
			for status(stb, "inv-a2").Status == switchboard.StatusDispatched {
				if time.Now().After(deadline) {
					t.Fatal("no survivor resolved the dead replica's call")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := status(stb, "inv-a2"); got.Status != switchboard.StatusFailed || got.Error.Code != switchboard.CodeOutcomeUnknown {
				t.Fatalf("the survivor ended the call %s %+v, want failed OUTCOME_UNKNOWN", got.Status, got.Error)
			} else if !strings.Contains(got.Error.Message, a2.ReplicaID()) {
				t.Fatalf("the call's end does not name the replica that died (%s): %q", a2.ReplicaID(), got.Error.Message)
			}
			if got := status(stb, "inv-b"); got.Status != switchboard.StatusDispatched {
				t.Fatalf("the survivor touched its own live call: %+v", got)
			}
			// Its row goes once its work is resolved (just after the call).
			for gone := false; !gone; time.Sleep(20 * time.Millisecond) {
				list, err := stb.ReplicaList(ctx)
				if err != nil {
					t.Fatal(err)
				}
				gone = true
				for _, r := range list {
					if r.ID == a2.ReplicaID() || r.ID == a.ReplicaID() {
						gone = false
						if time.Now().After(deadline) {
							t.Fatalf("a resolved replica is still registered: %+v", r)
						}
					}
				}
			}
		})
	}
}

// TestSlowBeatingReplicaIsNotTakenForDead: a replica records its own
// timeout, and a survivor whose own timeout is shorter waits for the
// replica's: one that beats once a second is alive to a survivor that
// would, by its own 200 ms, have taken it over many times meanwhile.
func TestSlowBeatingReplicaIsNotTakenForDead(t *testing.T) {
	ctx := context.Background()
	st := durables(t)[0].open(t)
	t.Cleanup(func() { st.Close() })
	slow, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: "tok",
		Replicas: daemon.ReplicaOptions{Name: "slow", Heartbeat: time.Second, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slow.Close() })
	now := time.Now()
	if err := st.InvocationCreate(ctx, switchboard.Invocation{ID: "inv-slow", Tool: "t.x", Surface: switchboard.SurfaceAPI,
		Status: switchboard.StatusDispatched, Replica: slow.ReplicaID(), CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	quick, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: "tok",
		Replicas: daemon.ReplicaOptions{Name: "quick", Heartbeat: 20 * time.Millisecond, Timeout: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { quick.Close() })
	// Wait until quick has looked at slow's beats standing still for well
	// over its own timeout: 100 of its beats (at least 2 s).
	beats := func(id string) int64 {
		list, err := st.ReplicaList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list {
			if r.ID == id {
				if r.ClaimedBy != "" {
					t.Fatalf("replica %s (timeout %d ms) was claimed by %s while alive", r.Name, r.TimeoutMs, r.ClaimedBy)
				}
				return r.Beats
			}
		}
		t.Fatalf("replica %s is gone", id)
		return 0
	}
	for start := beats(quick.ReplicaID()); beats(quick.ReplicaID()) < start+100; {
		beats(slow.ReplicaID())
		time.Sleep(20 * time.Millisecond)
	}
	if inv, err := st.InvocationGet(ctx, "inv-slow"); err != nil || inv.Status != switchboard.StatusDispatched {
		t.Fatalf("the slow replica's call: %s %v; want still dispatched", inv.Status, err)
	}
}

// The calls a sweep ends are counted by the replica that swept them (the
// one that ran them is gone), and their entries carry the duration the
// record does: a restart's sweep here, a survivor's takeover alike.
func TestSweptCallsAreCounted(t *testing.T) {
	for _, d := range durables(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			st := d.open(t)
			a, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: "tok", Replicas: daemon.ReplicaOptions{Name: "a"}})
			if err != nil {
				t.Fatal(err)
			}
			created := time.Now().Add(-3 * time.Second)
			if err := st.InvocationCreate(ctx, switchboard.Invocation{ID: "inv-swept", Tool: "t.x", Surface: switchboard.SurfaceAPI,
				Status: switchboard.StatusDispatched, Replica: a.ReplicaID(), CreatedAt: created, UpdatedAt: created}); err != nil {
				t.Fatal(err)
			}
			a.Close()
			st.Close()

			st = d.open(t)
			defer st.Close()
			a2, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: "tok", Replicas: daemon.ReplicaOptions{Name: "a"}})
			if err != nil {
				t.Fatal(err)
			}
			defer a2.Close()
			srv := httptest.NewServer(a2.Handler())
			defer srv.Close()
			body := scrape(t, srv.URL+"/metrics", "tok")
			for _, want := range []string{
				`switchboard_calls_total{class="other",outcome="failed",surface="api",tool="t.x",transport="other"} 1`,
				`switchboard_call_errors_total{code="OUTCOME_UNKNOWN",surface="api"} 1`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("metrics lack %s:\n%s", want, grepLines(body, "switchboard_call"))
				}
			}
			page, err := st.ActivityList(ctx, switchboard.ActivityFilter{Verb: "tool.call"})
			if err != nil || len(page) != 1 {
				t.Fatalf("tool.call entries: %v %v", page, err)
			}
			var det struct {
				DurationMs float64 `json:"durationMs"`
			}
			if json.Unmarshal(page[0].Details, &det) != nil || det.DurationMs < 3000 {
				t.Errorf("the swept call's entry says %s, want durationMs of the record (over 3 s)", page[0].Details)
			}
		})
	}
}
