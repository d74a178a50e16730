package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

// Three replicas on one Postgres, each with its own bus: a tab's stream on
// a, another tab's on c, a call to the first tab made on b and answered on
// b. The request and the ack reach a on its own topic; c, which keeps a
// state of its own tab (so it listens to the sessions' dispatch topics),
// hears none of them.
func TestTabMessagesReachOnlyTheHolder(t *testing.T) {
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("SWITCHBOARD_TEST_POSTGRES is not set")
	}
	ctx := context.Background()
	raw := make([]byte, 8)
	rand.Read(raw)
	schema := "sbroute_" + hex.EncodeToString(raw)
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
	var (
		ms  [3]*Manager
		bs  [3]*bus.Postgres
		brs [3]*broker.Broker
	)
	for i := range ms {
		id := "replica-" + string(rune('a'+i))
		if err := st.ReplicaRegister(ctx, switchboard.Replica{ID: id, Name: id, StartedAt: time.Now(), HeartbeatAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		b, err := bus.OpenPostgres(ctx, dsn, &bus.PostgresOptions{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(Options{Store: st, Bus: b, Presence: true, Replica: id, Heartbeat: 15 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := registry.New(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		br := broker.New(broker.Options{Store: st, Registry: reg, Browser: m, Bus: b, Replica: id})
		ms[i], bs[i], brs[i] = m, b, br
		t.Cleanup(func() { br.Close(); m.Shutdown(); b.Close() })
	}
	a, b, c := ms[0], ms[1], ms[2]
	attach := func(m *Manager) (string, *Conn) {
		cr, err := m.Create(ctx, "user:alice")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Advertise(ctx, cr.SessionID, []switchboard.Tool{navTool()}); err != nil {
			t.Fatal(err)
		}
		conn, err := m.Attach(ctx, cr.SessionID, "")
		if err != nil {
			t.Fatal(err)
		}
		return cr.SessionID, conn
	}
	id, conn := attach(a)
	_, _ = attach(c) // c keeps a tab of its own
	until(t, b, "b sees the tab on a", func() bool { return b.Elsewhere(id) == a.PresenceID() })

	heard := bs[2].HeardOn(topicDispatch(id))
	inv, done := callOn(t, ctx, brs[1], broker.CallRequest{Tool: "nav.goto", SessionID: id, RunID: "run-1", Input: []byte(`{"page":"x"}`), Caller: &operator})
	if req := request(t, next(t, conn)); req.InvocationID != inv.ID {
		t.Fatalf("the tab on a got %s, want %s", req.InvocationID, inv.ID)
	}
	if _, err := answer(ctx, brs[1], b, broker.Answer{SessionID: id, RunID: "run-1", InvocationID: inv.ID, Result: ok(`{"url":"/x"}`)}); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.err != nil || got.inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("the caller on b: %+v %v", got.inv, got.err)
	}
	// The ack went to a as well: its log no longer holds the request.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if info, err := a.Info(ctx, id); err == nil && info.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a still holds the answered request")
		}
	}
	// A sentinel on the dispatch channel, sent after everything else:
	// once c has it, whatever was sent on that channel before has arrived.
	seen := make(chan struct{}, 1)
	cancel, err := bs[2].Subscribe(topicDispatch("sentinel"), func([]byte) { seen <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := bs[1].Publish(ctx, topicDispatch("sentinel"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the sentinel never reached c")
	}
	if n := bs[2].HeardOn(topicDispatch(id)) - heard; n != 1 {
		t.Fatalf("c heard %d notifications on the sessions' dispatch channel; want only the sentinel", n)
	}
}

// A request that reached the replica holding the tab's stream just as the
// stream moved is handed over to the new holder (it is not in the store,
// so the new holder's replay would not bring it).
func TestMovedHandsRequestsOver(t *testing.T) {
	r := newReplicas(t)
	a, b := r.m[0], r.m[1]
	cr, err := a.Create(r.ctx, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	id := cr.SessionID
	if _, err := a.Advertise(r.ctx, id, []switchboard.Tool{navTool()}); err != nil {
		t.Fatal(err)
	}
	connA, err := a.Attach(r.ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"protocolVersion":"` + switchboard.ProtocolVersion + `","invocationId":"inv-moving","runId":"-","tool":"nav.goto","input":{"page":"x"},"timeoutMs":1000}`)
	if err := a.bus.Publish(r.ctx, bus.ReplicaTopic(a.replica, dispatchName), addressed(id, encodeDispatch(msgRequest, "inv-moving", data))); err != nil {
		t.Fatal(err)
	}
	if req := request(t, next(t, connA)); req.InvocationID != "inv-moving" {
		t.Fatalf("a's stream got %s", req.InvocationID)
	}
	connB, err := b.Attach(r.ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	if req := request(t, next(t, connB)); req.InvocationID != "inv-moving" {
		t.Fatalf("b's stream got %s, want the request a held", req.InvocationID)
	}
}

// A per-call message that reaches a replica keeping no state of the tab
// (its stream moved on, or presence was stale) is passed to the session's
// topic, where the replica that keeps the tab hears it.
func TestMisdirectedMessagePassedOn(t *testing.T) {
	r := newReplicas(t)
	a, b := r.m[0], r.m[1]
	cr, err := a.Create(r.ctx, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	id := cr.SessionID
	if _, err := a.Advertise(r.ctx, id, []switchboard.Tool{navTool()}); err != nil {
		t.Fatal(err)
	}
	conn, err := a.Attach(r.ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"protocolVersion":"` + switchboard.ProtocolVersion + `","invocationId":"inv-astray","runId":"-","tool":"nav.goto","input":{"page":"x"},"timeoutMs":1000}`)
	if err := b.bus.Publish(r.ctx, bus.ReplicaTopic(b.replica, dispatchName), addressed(id, encodeDispatch(msgRequest, "inv-astray", data))); err != nil {
		t.Fatal(err)
	}
	if req := request(t, next(t, conn)); req.InvocationID != "inv-astray" {
		t.Fatalf("a's stream got %s, want the request sent to b", req.InvocationID)
	}
}
