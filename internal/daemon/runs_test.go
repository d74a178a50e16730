package daemon_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// TestRestartEndsRunsLeftRunning: a daemon that stops without a clean
// release leaves a run stored as running (its process died mid-run); the
// restart's sweep, on SQLite and on Postgres, ends it failed with
// OUTCOME_UNKNOWN and appends a RUN_ERROR to its stored log, so a follower
// sees an end. A run that ended waiting for an approval stays waiting, and
// another live replica's running run is left alone.
func TestRestartEndsRunsLeftRunning(t *testing.T) {
	for _, d := range durables(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			start := func(name string) (*daemon.Daemon, switchboard.Store) {
				st := d.open(t)
				dm, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: "tok", Replicas: daemon.ReplicaOptions{Name: name}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { dm.Close(); st.Close() })
				return dm, st
			}
			stored := func(st switchboard.Store, id, replica string, status switchboard.RunStatus) {
				r := switchboard.RunRecord{RunInfo: switchboard.RunInfo{RunID: id, ThreadID: "chat-" + id, Status: switchboard.RunRunning,
					CreatedAt: time.Now()}, Replica: replica}
				if err := st.RunCreate(ctx, r); err != nil {
					t.Fatal(err)
				}
				r.Status = status
				if err := st.RunAppend(ctx, r, []switchboard.RunEvent{{Seq: 0, JSON: []byte(`{"type":"RUN_STARTED","threadId":"chat-` + id + `","runId":"` + id + `"}`)}}); err != nil {
					t.Fatal(err)
				}
			}
			a, sta := start("a")
			b, _ := start("b")
			stored(sta, "run-a", a.ReplicaID(), switchboard.RunRunning)
			stored(sta, "run-a-waiting", a.ReplicaID(), switchboard.RunWaiting)
			stored(sta, "run-b", b.ReplicaID(), switchboard.RunRunning)
			a.Close() // no Release: as a crash leaves it
			sta.Close()

			_, st := start("a")
			got, err := st.RunGet(ctx, "run-a")
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != switchboard.RunFailed || got.Error == nil || got.Error.Code != switchboard.CodeOutcomeUnknown || got.Events != 2 {
				t.Fatalf("the restart left its run %s %+v (%d events), want failed OUTCOME_UNKNOWN with a terminal event", got.Status, got.Error, got.Events)
			}
			evs, err := st.RunEventList(ctx, "run-a", 1, 0)
			if err != nil || len(evs) != 1 {
				t.Fatalf("terminal event: %v %v", evs, err)
			}
			ev, err := agui.Decode(evs[0].JSON)
			if re, ok := ev.(*agui.RunError); err != nil || !ok || re.Code != string(switchboard.CodeOutcomeUnknown) {
				t.Fatalf("terminal event %s (%v)", evs[0].JSON, err)
			}
			for id, want := range map[string]switchboard.RunStatus{"run-a-waiting": switchboard.RunWaiting, "run-b": switchboard.RunRunning} {
				if got, _ := st.RunGet(ctx, id); got.Status != want {
					t.Errorf("%s: %s, want %s", id, got.Status, want)
				}
			}
		})
	}
}
