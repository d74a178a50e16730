package broker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/postgres"
)

// TestEndReachesOnlyItsWaiters: three replicas on one Postgres, each with
// its own bus. Replica a owns a submitted call, replica b awaits it, and
// replica c waits for a call of its own. The end reaches b (through a,
// which b asked), and c's listening connection hears nothing of it.
func TestEndReachesOnlyItsWaiters(t *testing.T) {
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("SWITCHBOARD_TEST_POSTGRES is not set")
	}
	ctx := context.Background()
	raw := make([]byte, 8)
	rand.Read(raw)
	schema := "sbends_" + hex.EncodeToString(raw)
	st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(ctx)
		}
	})
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	tool := slowTool("test.block", 0, 0, switchboard.CostCheap)
	tool.Binding = &switchboard.Binding{Go: true}
	if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
		t.Fatal(err)
	}
	buses := map[string]*bus.Postgres{}
	brokers := map[string]*broker.Broker{}
	blk := newBlocker()
	for _, r := range []string{"a", "b", "c"} {
		bs, err := bus.OpenPostgres(ctx, dsn, &bus.PostgresOptions{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bs.Close() })
		br := broker.New(broker.Options{Store: st, Registry: reg, Bus: bs, Replica: r, RecordAfter: -1})
		br.Handle(tool.Name, blk.fn)
		t.Cleanup(br.Close)
		buses[r], brokers[r] = bs, br
	}
	// c waits for a call of its own, which stays running.
	own, err := brokers["c"].Submit(ctx, broker.CallRequest{Tool: tool.Name, Caller: &operator})
	if err != nil {
		t.Fatal(err)
	}
	<-blk.started
	cctx, stopC := context.WithCancel(ctx)
	defer stopC()
	go brokers["c"].Await(cctx, own.ID, nil)

	inv, err := brokers["a"].Submit(ctx, broker.CallRequest{Tool: tool.Name, Caller: &operator})
	if err != nil {
		t.Fatal(err)
	}
	<-blk.started
	there := make(chan switchboard.Invocation, 1)
	topicsB := buses["b"].Topics()
	go func() { got, _ := brokers["b"].Await(ctx, inv.ID, nil); there <- got }()
	// Wait until b's wait is in place — its ask reached a (or, with ends
	// sent to every replica, b subscribed to the call's topic) — so the
	// end travels as a signal, not by b's poll.
	waitFor(t, func() bool { return buses["a"].Heard() > 0 || buses["b"].Topics() > topicsB })
	heardBefore := buses["c"].Heard()
	start := time.Now()
	close(blk.release)
	got := <-there
	if got.Status != switchboard.StatusSucceeded {
		t.Fatalf("Await on b = %+v; want the succeeded record", got)
	}
	t.Logf("b heard the end after %s", time.Since(start))
	// A sentinel on c's own topic, sent after the end: once c has it,
	// anything sent to c before it has arrived too (one notification
	// queue, in commit order).
	seen := make(chan struct{}, 1)
	cancel, err := buses["c"].Subscribe(bus.ReplicaTopic("c", "sentinel"), func([]byte) { seen <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := buses["a"].Publish(ctx, bus.ReplicaTopic("c", "sentinel"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the sentinel never reached c")
	}
	if n := buses["c"].Heard() - heardBefore; n != 1 {
		t.Fatalf("c's connection heard %d notifications; want only the sentinel", n)
	}
}

// waitFor polls cond; the bound only turns a lost message into a
// failure.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never got in place")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An interest that reaches the owner after the call ended is answered at
// once: the owner reads the store and sends the end to the replica that
// asked, on that replica's own topic.
func TestInterestInAnEndedCall(t *testing.T) {
	t.Parallel()
	b := bus.NewLocal()
	e := newEnv(t, func(o *broker.Options) { o.Bus = b; o.Replica = "a"; o.RecordAfter = -1 })
	e.goTool(t, slowTool("test.quick", 0, 0, switchboard.CostCheap), func(context.Context, json.RawMessage) (any, error) {
		return map[string]bool{"ok": true}, nil
	})
	ctx := context.Background()
	inv, err := e.b.Call(ctx, broker.CallRequest{Tool: "test.quick", Caller: &operator})
	if err != nil || inv.Status != switchboard.StatusSucceeded || inv.Replica != "a" {
		t.Fatalf("the call: %+v %v", inv, err)
	}
	got := make(chan []byte, 1)
	cancel, err := b.Subscribe(bus.ReplicaTopic("r2", "invocation.done"), func(p []byte) { got <- bytes.Clone(p) })
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := b.Publish(ctx, bus.ReplicaTopic("a", "invocation.interest"), []byte(inv.ID+" r2")); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if !bytes.HasPrefix(p, []byte(inv.ID+"\n{")) {
			t.Fatalf("r2 got %q; want the call's id and its record", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the owner never answered the interest")
	}
}
