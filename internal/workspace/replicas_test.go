package workspace

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// replicaWorkspaces is n Workspaces on one store and one bus: the
// workspace of n serve replicas.
func replicaWorkspaces(t *testing.T, n int) (*sqlite.Store, *bus.Local, []*Workspace) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := bus.NewLocal()
	var out []*Workspace
	for range n {
		out = append(out, newReplicaWorkspace(t, st, b))
	}
	return st, b, out
}

func newReplicaWorkspace(t *testing.T, st *sqlite.Store, b *bus.Local) *Workspace {
	t.Helper()
	reg, err := registry.New(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := New(Options{Registry: reg, Tabs: st, Bus: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ws.Close)
	return ws
}

// contextIDs waits until ws's digest holds exactly want (by context id),
// re-reading it at each change batch.
func contextIDs(t *testing.T, ws *Workspace, want ...string) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		changed, _ := ws.Changed()
		d, err := ws.Digest(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, c := range d.Contexts {
			got = append(got, c.ID)
		}
		if b, _ := json.Marshal(got); string(b) == mustJSON(want) {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("the digest's contexts are %v, want %v", got, want)
		}
	}
}

func mustJSON(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// A tab's report made through one replica shows in the digest of every
// other; the newest report wins wherever it was made; a closed session
// takes no report; a replica started later loads the reports of attached
// tabs.
func TestReportReachesEveryReplica(t *testing.T) {
	ctx := context.Background()
	st, b, ws := replicaWorkspaces(t, 2)
	if err := st.SessionCreate(ctx, switchboard.Session{ID: "ses_a", TokenHash: "h", Principal: "user:alice", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws[0].Report(ctx, "ses_a", "user:alice", []switchboard.WorkspaceContext{page("plan", switchboard.AttentionFocused, "p1")}); err != nil {
		t.Fatal(err)
	}
	contextIDs(t, ws[1], "plan")
	if got := ws[1].TabContexts(ctx, "ses_a"); len(got) != 1 || len(got[0].Panels) != 1 || got[0].SessionID != "ses_a" || got[0].Provenance == nil {
		t.Fatalf("the report relayed to replica 1: %+v", got)
	}

	if _, err := ws[1].Report(ctx, "ses_a", "user:alice", []switchboard.WorkspaceContext{page("inbox", switchboard.AttentionVisible)}); err != nil {
		t.Fatal(err)
	}
	contextIDs(t, ws[0], "inbox")
	contextIDs(t, ws[1], "inbox")

	// Bad input is refused before anything is stored.
	if _, err := ws[0].Report(ctx, "ses_a", "user:alice", []switchboard.WorkspaceContext{{ID: "x", Kind: "page", Attention: "staring"}}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("a bad report: %v", err)
	}
	if s, _ := st.SessionGet(ctx, "ses_a"); len(s.Report.Contexts) != 1 || s.Report.Contexts[0].ID != "inbox" {
		t.Fatalf("stored after a refused report: %+v", s.Report)
	}

	// A replica starting now loads the reports of tabs whose stream is
	// attached to a live replica, and not of those on a replica that
	// stopped.
	if err := st.SessionStream(ctx, "ses_a", "replica-dead", true, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"replica-x", "replica-dead"} {
		if err := st.ReplicaRegister(ctx, switchboard.Replica{ID: id, Name: id, StartedAt: time.Now(), HeartbeatAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.ReplicaStop(ctx, "replica-dead", time.Now()); err != nil {
		t.Fatal(err)
	}
	early := newReplicaWorkspace(t, st, b)
	if err := early.Load(ctx); err != nil {
		t.Fatal(err)
	}
	contextIDs(t, early)
	if err := st.SessionStream(ctx, "ses_a", "replica-x", true, time.Now()); err != nil {
		t.Fatal(err)
	}
	late := newReplicaWorkspace(t, st, b)
	if err := late.Load(ctx); err != nil {
		t.Fatal(err)
	}
	contextIDs(t, late, "inbox")

	// A closed session takes no report, and changes no replica's digest.
	if err := st.SessionClose(ctx, "ses_a", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := ws[0].Report(ctx, "ses_a", "user:alice", []switchboard.WorkspaceContext{page("late", switchboard.AttentionFocused)}); switchboard.CodeOf(err) != switchboard.CodeSessionGone {
		t.Fatalf("a report on a closed session: %v", err)
	}
	contextIDs(t, ws[1], "inbox")
}
