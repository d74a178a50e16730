package bus_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/postgres"
)

// pgSchema migrates a fresh schema (the store's migrations create the
// payload table) and drops it when the test ends.
func pgSchema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("SWITCHBOARD_TEST_POSTGRES is not set")
	}
	b := make([]byte, 8)
	rand.Read(b)
	schema = "sbbus_" + hex.EncodeToString(b)
	st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	t.Cleanup(func() {
		ctx := context.Background()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(ctx)
		}
	})
	return dsn, schema
}

// openBus opens one Postgres bus, as one process would.
func openBus(t testing.TB, dsn, schema string) *bus.Postgres {
	t.Helper()
	b, err := bus.OpenPostgres(context.Background(), dsn, &bus.PostgresOptions{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// inbox collects what a handler receives; the handler never blocks.
type inbox struct {
	ch chan []byte
}

func newInbox() *inbox { return &inbox{ch: make(chan []byte, 64)} }

func (in *inbox) handler(p []byte) {
	select {
	case in.ch <- bytes.Clone(p):
	default:
	}
}

// next waits for the next message; the bound only turns a lost message
// into a failure instead of a hung test.
func (in *inbox) next(t *testing.T, what string) []byte {
	t.Helper()
	select {
	case p := <-in.ch:
		return p
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: nothing arrived", what)
		return nil
	}
}

func (in *inbox) empty(t *testing.T, what string) {
	t.Helper()
	select {
	case p := <-in.ch:
		t.Fatalf("%s: unexpected message %q", what, p)
	default:
	}
}

// Two buses on one schema, as two replicas: each delivers to the other's
// subscribers and to its own exactly once; text, binary and payloads past
// NOTIFY's limit (through the table) arrive intact and in order.
func TestPostgresDeliversAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, schema := pgSchema(t)
	a, b := openBus(t, dsn, schema), openBus(t, dsn, schema)
	onA, onB := newInbox(), newInbox()
	cancelA, err := a.Subscribe("session.dispatch.s1", onA.handler)
	if err != nil {
		t.Fatal(err)
	}
	defer cancelA()
	cancelB, err := b.Subscribe("session.dispatch.s1", onB.handler)
	if err != nil {
		t.Fatal(err)
	}
	defer cancelB()

	big := bytes.Repeat([]byte("0123456789"), 2000) // 20,000 bytes: past NOTIFY's limit
	binary := []byte{'r', 0, 1, 2, 0xff, '\n'}
	msgs := [][]byte{[]byte("hello"), binary, big, []byte("after")}
	for _, m := range msgs {
		if err := a.Publish(ctx, "session.dispatch.s1", m); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range msgs {
		if got := onB.next(t, "remote"); !bytes.Equal(got, m) {
			t.Fatalf("remote message %d: got %d bytes %q..., want %d bytes", i, len(got), got[:min(len(got), 16)], len(m))
		}
		if got := onA.next(t, "local"); !bytes.Equal(got, m) {
			t.Fatalf("local message %d differs", i)
		}
	}
	// The other way, and a marker proving A got no second copy of its own.
	if err := b.Publish(ctx, "session.dispatch.s1", []byte("from b")); err != nil {
		t.Fatal(err)
	}
	if got := onA.next(t, "from b"); string(got) != "from b" {
		t.Fatalf("A got %q, want its own messages once and then %q", got, "from b")
	}
	onA.empty(t, "after the marker")

	var stored int
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "bus_payloads"}.Sanitize()).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 1 {
		t.Fatalf("%d payloads stored, want 1 (only the one past NOTIFY's limit)", stored)
	}

	if err := a.Publish(ctx, "t", make([]byte, bus.MaxPayload+1)); switchboard.CodeOf(err) != switchboard.CodePayloadTooLarge {
		t.Fatalf("oversize publish: %v", err)
	}
}

// Stores in different schemas of one database do not hear each other, and
// a topic that is no valid channel name (too long, odd characters) is
// carried under its hash.
func TestPostgresTopicsAndNamespaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, s1 := pgSchema(t)
	_, s2 := pgSchema(t)
	a, b, other := openBus(t, dsn, s1), openBus(t, dsn, s1), openBus(t, dsn, s2)
	long := "panel.instance." + strings.Repeat("Ä x/", 40)
	onB, onOther := newInbox(), newInbox()
	for _, topic := range []string{long, "plain"} {
		c1, err := b.Subscribe(topic, onB.handler)
		if err != nil {
			t.Fatal(err)
		}
		defer c1()
		c2, err := other.Subscribe(topic, onOther.handler)
		if err != nil {
			t.Fatal(err)
		}
		defer c2()
	}
	if err := a.Publish(ctx, long, []byte("long")); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, "plain", []byte("plain")); err != nil {
		t.Fatal(err)
	}
	if got := onB.next(t, "long topic"); string(got) != "long" {
		t.Fatalf("got %q", got)
	}
	if got := onB.next(t, "plain topic"); string(got) != "plain" {
		t.Fatalf("got %q", got)
	}
	// The other schema's bus hears its own schema's publish, and nothing
	// of the first schema's before it.
	if err := other.Publish(ctx, "plain", []byte("own")); err != nil {
		t.Fatal(err)
	}
	if got := onOther.next(t, "other schema"); string(got) != "own" {
		t.Fatalf("the other schema's bus got %q first, want only its own %q", got, "own")
	}
}

// Cancel: once it returns the handler is not called again, the channel is
// UNLISTENed when the last subscription goes (reference counting), and a
// fresh Subscribe of the same topic works.
func TestPostgresCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, schema := pgSchema(t)
	a, b := openBus(t, dsn, schema), openBus(t, dsn, schema)
	gone, marker, second := newInbox(), newInbox(), newInbox()
	c1, _ := b.Subscribe("t", gone.handler)
	c2, _ := b.Subscribe("t", second.handler)
	cm, _ := b.Subscribe("marker", marker.handler)
	defer cm()
	c1()
	c1() // idempotent
	if n := b.Topics(); n != 2 {
		t.Fatalf("%d channels, want 2 (t is still held by its second subscriber)", n)
	}
	a.Publish(ctx, "t", []byte("1"))
	if got := second.next(t, "second subscriber"); string(got) != "1" {
		t.Fatalf("got %q", got)
	}
	c2()
	a.Publish(ctx, "t", []byte("2"))
	a.Publish(ctx, "marker", []byte("m")) // notifications arrive in order: t's would be first
	marker.next(t, "marker")
	gone.empty(t, "cancelled subscriber")
	second.empty(t, "cancelled subscriber")
	if n := b.Topics(); n != 1 {
		t.Fatalf("%d channels, want 1 (marker)", n)
	}
	again := newInbox()
	c3, _ := b.Subscribe("t", again.handler)
	defer c3()
	a.Publish(ctx, "t", []byte("3"))
	if got := again.next(t, "resubscribed"); string(got) != "3" {
		t.Fatalf("got %q", got)
	}
	b.Close()
	if err := b.Publish(ctx, "t", nil); switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("publish after close: %v", err)
	}
	if _, err := b.Subscribe("t", func([]byte) {}); switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("subscribe after close: %v", err)
	}
}

// The listening connection is terminated by the server: the bus
// reconnects, re-LISTENs every channel, and delivers again.
func TestPostgresReconnects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, schema := pgSchema(t)
	a, b := openBus(t, dsn, schema), openBus(t, dsn, schema)
	in := newInbox()
	cancel, _ := b.Subscribe("session.state.s1", in.handler)
	defer cancel()
	a.Publish(ctx, "session.state.s1", []byte("before"))
	in.next(t, "before")

	pid := b.ListenerPID()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate listener %d: %v %v", pid, ok, err)
	}
	// Wait for the new connection (no timing: the condition itself).
	for b.ListenerPID() == pid || !b.Connected() {
		time.Sleep(10 * time.Millisecond)
	}
	a.Publish(ctx, "session.state.s1", []byte("after"))
	if got := in.next(t, "after reconnect"); string(got) != "after" {
		t.Fatalf("got %q", got)
	}
}

// Many goroutines subscribe, publish and cancel on two buses at once:
// every subscriber sees its own remote message, nothing leaks (-race).
func TestPostgresConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, schema := pgSchema(t)
	a, b := openBus(t, dsn, schema), openBus(t, dsn, schema)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			for j := range 10 {
				topic := fmt.Sprintf("invocation.done.%d.%d", i, j)
				in := newInbox()
				cancel, err := b.Subscribe(topic, in.handler)
				if err != nil {
					t.Error(err)
					return
				}
				if err := a.Publish(ctx, topic, []byte(topic)); err != nil {
					t.Error(err)
				}
				select {
				case got := <-in.ch:
					if string(got) != topic {
						t.Errorf("got %q on %s", got, topic)
					}
				case <-time.After(30 * time.Second):
					t.Errorf("%s: nothing arrived", topic)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	if n := b.Topics(); n != 0 {
		t.Fatalf("%d channels left after every cancel", n)
	}
}

// subscribe is Subscribe that fails the test on error.
func subscribe(t *testing.T, b *bus.Postgres, topic string, h bus.Handler) func() {
	t.Helper()
	cancel, err := b.Subscribe(topic, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return cancel
}

func publish(t *testing.T, b *bus.Postgres, topic, payload string) {
	t.Helper()
	if err := b.Publish(context.Background(), topic, []byte(payload)); err != nil {
		t.Fatal(err)
	}
}

// Two topics of one family share one channel: each subscriber gets only
// its own topic's messages (text, binary and stored ones), and cancelling
// one keeps the other and the channel.
func TestPostgresMultiplexesFamilies(t *testing.T) {
	t.Parallel()
	dsn, schema := pgSchema(t)
	a, b := openBus(t, dsn, schema), openBus(t, dsn, schema)
	onX, onY, marker := newInbox(), newInbox(), newInbox()
	cancelX := subscribe(t, b, "invocation.done.x", onX.handler)
	subscribe(t, b, "invocation.done.y", onY.handler)
	if n := b.Listened(); n != 1 {
		t.Fatalf("%d channels LISTENed for two topics of one family, want 1", n)
	}
	big := strings.Repeat("y", 9000) // past NOTIFY's limit: through the table
	publish(t, a, "invocation.done.y", "for y")
	publish(t, a, "invocation.done.x", "for x")
	publish(t, a, "invocation.done.y", big)
	publish(t, a, "invocation.done.z", "for nobody") // the family's, not subscribed
	if got := onY.next(t, "y"); string(got) != "for y" {
		t.Fatalf("y got %q first", got)
	}
	if got := onY.next(t, "y, stored"); string(got) != big {
		t.Fatalf("y got %d bytes, want the stored %d", len(got), len(big))
	}
	if got := onX.next(t, "x"); string(got) != "for x" {
		t.Fatalf("x got %q", got)
	}
	onX.empty(t, "x after its own")

	cancelX()
	if n := b.Listened(); n != 1 {
		t.Fatalf("%d channels LISTENed after cancelling x, want 1 (y holds the family)", n)
	}
	subscribe(t, b, "marker", marker.handler)
	publish(t, a, "invocation.done.x", "x again")
	publish(t, a, "invocation.done.y", "y again")
	publish(t, a, "marker", "m") // one sender's notifications arrive in order
	if got := onY.next(t, "y after x cancelled"); string(got) != "y again" {
		t.Fatalf("y got %q", got)
	}
	marker.next(t, "marker")
	onX.empty(t, "cancelled x")
	onY.empty(t, "y")
	if n := b.Topics(); n != 2 {
		t.Fatalf("%d topics subscribed, want 2 (y, marker)", n)
	}
}

// A family stays LISTENed for the linger after its last subscriber, so
// the next topic of it is subscribed without a LISTEN and still hears a
// remote publish; with no linger the channel is UNLISTENed when its last
// subscriber goes.
func TestPostgresFamilyLingers(t *testing.T) {
	t.Parallel()
	dsn, schema := pgSchema(t)
	a, b := openBus(t, dsn, schema), openBus(t, dsn, schema)
	eager, err := bus.OpenPostgres(context.Background(), dsn, &bus.PostgresOptions{Schema: schema, Linger: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close()

	first := newInbox()
	subscribe(t, b, "invocation.done.1", first.handler)()
	if n, topics := b.Listened(), b.Topics(); n != 1 || topics != 0 {
		t.Fatalf("after the last cancel: %d channels LISTENed (want 1, lingering), %d topics (want 0)", n, topics)
	}
	second := newInbox()
	subscribe(t, b, "invocation.done.2", second.handler)
	publish(t, a, "invocation.done.1", "old")
	publish(t, a, "invocation.done.2", "new")
	if got := second.next(t, "second call's result"); string(got) != "new" {
		t.Fatalf("got %q", got)
	}
	first.empty(t, "cancelled first")

	in := newInbox()
	subscribe(t, eager, "invocation.done.3", in.handler)()
	for eager.Listened() != 0 { // the condition itself, no timing
		time.Sleep(10 * time.Millisecond)
	}
	again := newInbox()
	subscribe(t, eager, "invocation.done.4", again.handler)
	if n := eager.Listened(); n != 1 {
		t.Fatalf("Subscribe returned with %d channels LISTENed, want 1", n)
	}
	publish(t, a, "invocation.done.4", "re-LISTENed")
	if got := again.next(t, "after UNLISTEN and LISTEN"); string(got) != "re-LISTENed" {
		t.Fatalf("got %q", got)
	}
}

// The listening connection is terminated: the family's channel is
// LISTENed again on the new one, once, and both of its topics hear.
func TestPostgresReconnectRelistensFamily(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, schema := pgSchema(t)
	a, b := openBus(t, dsn, schema), openBus(t, dsn, schema)
	onS1, onS2 := newInbox(), newInbox()
	subscribe(t, b, "session.dispatch.s1", onS1.handler)
	subscribe(t, b, "session.dispatch.s2", onS2.handler)

	pid := b.ListenerPID()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate listener %d: %v %v", pid, ok, err)
	}
	for b.ListenerPID() == pid || !b.Connected() {
		time.Sleep(10 * time.Millisecond)
	}
	if n := b.Listened(); n != 1 {
		t.Fatalf("%d channels LISTENed after reconnect, want 1", n)
	}
	publish(t, a, "session.dispatch.s2", "to s2")
	publish(t, a, "session.dispatch.s1", "to s1")
	if got := onS1.next(t, "s1 after reconnect"); string(got) != "to s1" {
		t.Fatalf("s1 got %q", got)
	}
	if got := onS2.next(t, "s2 after reconnect"); string(got) != "to s2" {
		t.Fatalf("s2 got %q", got)
	}
}

// A bus on the store's notifier runs on the store driver's connections:
// it publishes on the store's pool and listens on a connection with the
// store's settings, opening no pool of its own; it reaches a bus that
// opened its own (OpenPostgres), payloads past NOTIFY's limit included.
func TestPostgresOnTheStoresNotifier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, schema := pgSchema(t)
	app := "sbstore_" + schema[len("sbbus_"):]
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	st, err := postgres.Open(ctx, dsn+sep+"application_name="+app, &postgres.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := st.Notifier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onStore, err := bus.NewPostgres(ctx, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer onStore.Close()
	other := openBus(t, dsn, schema)
	in, back := newInbox(), newInbox()
	cancel, err := onStore.Subscribe("session.dispatch.s1", in.handler)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	cancel2, err := other.Subscribe("session.dispatch.s2", back.handler)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel2()
	big := bytes.Repeat([]byte("x"), 9000)
	for _, m := range [][]byte{[]byte("small"), big} {
		if err := other.Publish(ctx, "session.dispatch.s1", m); err != nil {
			t.Fatal(err)
		}
		if got := in.next(t, "to the store's bus"); !bytes.Equal(got, m) {
			t.Fatalf("got %d bytes, want %d", len(got), len(m))
		}
		if err := onStore.Publish(ctx, "session.dispatch.s2", m); err != nil {
			t.Fatal(err)
		}
		if got := back.next(t, "from the store's bus"); !bytes.Equal(got, m) {
			t.Fatalf("got %d bytes back, want %d", len(got), len(m))
		}
	}
	// Every backend of this process's store and its bus carries the
	// store's application_name, the listener included: no second pool.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var listener string
	if err := conn.QueryRow(ctx, `SELECT application_name FROM pg_stat_activity WHERE pid = $1`, onStore.ListenerPID()).Scan(&listener); err != nil {
		t.Fatal(err)
	}
	var backends int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&backends); err != nil {
		t.Fatal(err)
	}
	if listener != app || backends > 3 {
		t.Fatalf("listener %q, %d backends named %q; want the listener among the store's (pool of 2, plus the listener)", listener, backends, app)
	}
	if err := onStore.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.InvocationList(ctx, switchboard.InvocationFilter{Limit: 1}); err != nil {
		t.Fatalf("closing the bus closed the store's pool: %v", err)
	}
}
