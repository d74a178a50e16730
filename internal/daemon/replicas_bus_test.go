package daemon_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/postgres"
)

// pgReplica is one daemon on a shared Postgres schema with its own
// Postgres bus: what one `switchboard serve` process has.
type pgReplica struct {
	d *daemon.Daemon
	c *client.Client
}

func pgReplicas(t *testing.T, n int) []pgReplica {
	t.Helper()
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = "replica-token"
	}
	return pgReplicasTokens(t, tokens...)
}

// pgReplicasTokens is pgReplicas with each replica's admin token.
func pgReplicasTokens(t *testing.T, tokens ...string) []pgReplica {
	t.Helper()
	n := len(tokens)
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("SWITCHBOARD_TEST_POSTGRES is not set")
	}
	schema := pgSchema(t, dsn)
	ctx := context.Background()
	out := make([]pgReplica, n)
	for i := range out {
		st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		b, err := bus.OpenPostgres(ctx, dsn, &bus.PostgresOptions{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		dm, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: tokens[i], Bus: b})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(dm.Handler())
		t.Cleanup(func() { srv.Close(); dm.Close(); b.Close(); st.Close() })
		out[i] = pgReplica{dm, client.New(srv.URL, tokens[i], nil)}
	}
	return out
}

// Issue 16 item 1 across two processes' buses: a catalog change made on A
// reaches B's registry (and so its MCP list_changed and search index)
// without B reading; a tab whose stream is on A runs a call made through
// B, named or not, and its result POSTed to B wakes B's caller; a call
// through A answered through B wakes A's caller.
func TestReplicasOverPostgresBus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := pgReplicas(t, 2)
	a, b := rs[0].c, rs[1].c

	changes := make(chan registry.Change, 8)
	defer rs[1].d.Registry.Subscribe(changes)()
	api := switchboard.Tool{Name: "notes.count", Description: "Count the notes.", Class: switchboard.ClassRead,
		Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "GET", URL: "http://127.0.0.1:1/count"}}}
	if _, err := a.RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{api}); err != nil {
		t.Fatal(err)
	}
	// B's own start-up registrations come as Local; A's start-up reload
	// and re-offers may reach B after it subscribed: after each change B
	// did not make, look for A's tool (Get does not read the store).
	for heard := false; !heard; {
		select {
		case c := <-changes:
			if !c.Local {
				_, err := rs[1].d.Registry.Get(ctx, "notes.count")
				heard = err == nil
			}
		case <-time.After(30 * time.Second):
			t.Fatal("B's registry never heard of A's registration")
		}
	}
	if got, err := rs[1].d.Registry.Get(ctx, "notes.count"); err != nil || got.Name != "notes.count" {
		t.Fatalf("B's catalog after A's change: %+v %v", got, err)
	}

	cred, err := a.OpenSession(ctx, client.SessionRequest{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	nav := switchboard.Tool{Name: "nav.goto", Description: "Go to a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}}}`)}
	if _, err := a.Tab(cred).Advertise(ctx, []switchboard.Tool{nav}); err != nil {
		t.Fatal(err)
	}
	stream, err := a.Tab(cred).Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if ev, err := stream.Next(); err != nil || ev.Kind != "session.ready" {
		t.Fatalf("first frame: %+v %v", ev, err)
	}
	// B learns of the tab from A's announcement (the condition, not a time).
	for !slices.ContainsFunc(rs[1].d.Sessions.LiveTools(), func(t switchboard.Tool) bool { return t.Name == "nav.goto" }) {
		time.Sleep(10 * time.Millisecond)
	}

	// call makes a call through caller and answers it through answerer.
	call := func(name string, caller, answerer *client.Client, o client.CallOptions, page string) {
		t.Helper()
		type answer struct {
			resp switchboard.CallResponse
			err  error
		}
		done := make(chan answer, 1)
		go func() {
			resp, err := caller.CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"`+page+`"}`), o)
			done <- answer{resp, err}
		}()
		ev, err := stream.Next()
		if err != nil || ev.Kind != "browser.action.request" {
			t.Fatalf("%s: the tab on A got %+v %v, want the request", name, ev, err)
		}
		var req switchboard.BrowserActionRequest
		if err := json.Unmarshal(ev.Data, &req); err != nil || string(req.Input) != `{"page":"`+page+`"}` {
			t.Fatalf("%s: request %s: %v", name, ev.Data, err)
		}
		st, err := answerer.Tab(cred).PostResult(ctx, req.RunID, switchboard.BrowserActionResult{
			InvocationID: req.InvocationID, OK: true, Result: json.RawMessage(`{"at":"` + page + `"}`)})
		if err != nil || st != switchboard.StatusSucceeded {
			t.Fatalf("%s: result POST: %s %v", name, st, err)
		}
		an := <-done
		if an.err != nil || an.resp.Status != switchboard.StatusSucceeded || string(an.resp.Result) != `{"at":"`+page+`"}` {
			t.Fatalf("%s: the caller got %+v %v", name, an.resp, an.err)
		}
	}
	call("named, through B, answered on B", b, b, client.CallOptions{SessionID: cred.SessionID}, "/one")
	call("unnamed, through B, answered on A", b, a, client.CallOptions{}, "/two")
	call("named, through A, answered on B", a, b, client.CallOptions{SessionID: cred.SessionID}, "/three")
}

// Each replica signs the checkpoints it exports with its own data root's
// key; one exported through replica A verifies through replica B (B asks
// the live replicas whether one issued it), and an edited one still fails.
func TestCheckpointVerifiesOnAnotherReplica(t *testing.T) {
	r := pgReplicas(t, 2)
	ctx := context.Background()
	if _, err := r[0].c.CallTool(ctx, "activity.get", nil, client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	cp, err := r[0].c.ActivityCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(cp)
	rep, err := r[1].c.VerifyActivityCheckpoint(ctx, raw)
	if err != nil || !rep.OK {
		t.Fatalf("A's checkpoint on B: %+v %v", rep, err)
	}
	if rep.VouchedBy != r[0].d.ReplicaID() {
		t.Fatalf("A's checkpoint on B is vouched for by %q, want A (%s): the report must say B did not check it", rep.VouchedBy, r[0].d.ReplicaID())
	}
	if rep, err := r[0].c.VerifyActivityCheckpoint(ctx, raw); err != nil || !rep.OK || rep.VouchedBy != "" {
		t.Fatalf("A's checkpoint on A: %+v %v, want checked there, vouched for by nobody", rep, err)
	}
	cp.Ts = cp.Ts.Add(time.Second) // covered by the signature
	raw, _ = json.Marshal(cp)
	if rep, err := r[1].c.VerifyActivityCheckpoint(ctx, raw); err != nil || rep.OK || !strings.Contains(rep.Problem, "signature") {
		t.Fatalf("an edited checkpoint on B: %+v %v", rep, err)
	}
}

// A vouch is believed only with a tag made with the cluster's admin token:
// the bus authenticates no sender, and anyone who can connect to the
// database can answer an ask. A is a replica that issued the checkpoint
// but holds another token, as a forger on the bus would: its yes does not
// make B pass the checkpoint.
func TestCheckpointVouchNeedsTheAdminToken(t *testing.T) {
	r := pgReplicasTokens(t, "another-token", "replica-token")
	ctx := context.Background()
	cp, err := r[0].c.ActivityCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(cp)
	rep, err := r[1].c.VerifyActivityCheckpoint(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.VouchedBy != "" || !strings.Contains(rep.Problem, "signature") {
		t.Fatalf("a checkpoint vouched for without the cluster's token passed on B: %+v", rep)
	}
}
