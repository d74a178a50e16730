package cluster_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/postgres"
)

// live is a Liveness the test decides: a replica is gone once the test
// says so.
type live struct {
	self string
	mu   sync.Mutex
	gone map[string]chan struct{}
}

func newLive(self string) *live { return &live{self: self, gone: map[string]chan struct{}{}} }

func (l *live) Self() string { return l.self }

func (l *live) Gone(id string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.chanLocked(id)
}

func (l *live) chanLocked(id string) chan struct{} {
	ch := l.gone[id]
	if ch == nil {
		ch = make(chan struct{})
		l.gone[id] = ch
	}
	return ch
}

func (l *live) markGone(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := l.chanLocked(id)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// pair is two replicas' Askers: a asks, b owns.
type pair struct {
	a, b   *cluster.Asker
	liveA  *live
	reach  chan context.Context // a blocking handler's ctx, once it runs
	unlock chan struct{}
}

// newPair starts replicas "a" and "b" on their own buses (one shared
// in-process bus passes the same value twice) and registers b's handlers.
func newPair(t *testing.T, busA, busB bus.Bus) *pair {
	t.Helper()
	p := &pair{liveA: newLive("a"), reach: make(chan context.Context, 1), unlock: make(chan struct{})}
	var err error
	if p.a, err = cluster.NewAsker(busA, p.liveA, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.a.Close)
	if p.b, err = cluster.NewAsker(busB, newLive("b"), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.b.Close)
	t.Cleanup(func() { close(p.unlock) })
	p.b.Handle("echo", func(ctx context.Context, req []byte) ([]byte, error) {
		return append([]byte("b:"), req...), nil
	})
	p.b.Handle("held", func(ctx context.Context, req []byte) ([]byte, error) {
		return nil, switchboard.Errorf(switchboard.CodeLeaseHeld, "panel %s is leased to agent:planner", req).
			WithDetails(map[string]any{"holder": "agent:planner"})
	})
	p.b.Handle("block", func(ctx context.Context, req []byte) ([]byte, error) {
		p.reach <- ctx
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.unlock:
			return nil, nil
		}
	})
	p.b.Handle("big", func(ctx context.Context, req []byte) ([]byte, error) {
		return bytes.Repeat([]byte("x"), cluster.MaxBody+1), nil
	})
	p.b.Handle("large", func(ctx context.Context, req []byte) ([]byte, error) {
		return bytes.Repeat(req, 4), nil // past one NOTIFY, within a message
	})
	return p
}

// exercise is what both buses must do.
func exercise(t *testing.T, p *pair) {
	ctx := context.Background()

	got, err := p.a.Ask(ctx, "b", "echo", []byte("hello"))
	if err != nil || string(got) != "b:hello" {
		t.Fatalf("answer: %q, %v", got, err)
	}

	large := bytes.Repeat([]byte("0123456789"), 1000)
	if got, err := p.a.Ask(ctx, "b", "large", large); err != nil || !bytes.Equal(got, bytes.Repeat(large, 4)) {
		t.Fatalf("a 40 KB answer: %d bytes, %v", len(got), err)
	}

	_, err = p.a.Ask(ctx, "b", "held", []byte("pnl_1"))
	e := switchboard.AsError(err)
	if e.Code != switchboard.CodeLeaseHeld || e.Message != "panel pnl_1 is leased to agent:planner" {
		t.Fatalf("the owner's error arrived as %v", err)
	}
	if d, _ := e.Details.(map[string]any); d["holder"] != "agent:planner" {
		t.Fatalf("its details arrived as %#v", e.Details)
	}
	if cluster.NoAnswer(err) {
		t.Fatal("the owner's answer reads as no answer")
	}

	if _, err := p.a.Ask(ctx, "b", "nobody", nil); switchboard.CodeOf(err) != switchboard.CodeUnavailable || !strings.Contains(err.Error(), "does not answer nobody") {
		t.Fatalf("a kind the owner does not handle: %v", err)
	}

	if _, err := p.a.Ask(ctx, "b", "echo", make([]byte, cluster.MaxBody+1)); switchboard.CodeOf(err) != switchboard.CodePayloadTooLarge {
		t.Fatalf("a request above the limit: %v", err)
	}
	if _, err := p.a.Ask(ctx, "b", "big", nil); switchboard.CodeOf(err) != switchboard.CodePayloadTooLarge || !strings.Contains(err.Error(), "answer to the big request") {
		t.Fatalf("an answer above the limit: %v", err)
	}

	// The caller's deadline ends the wait with TIMEOUT (the caller's own,
	// or the handler's that ran under the same deadline), and the owner's
	// handler ran under it.
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err = p.a.Ask(dctx, "b", "block", nil)
	cancel()
	if switchboard.CodeOf(err) != switchboard.CodeTimeout {
		t.Fatalf("past the deadline: %v", err)
	}
	if strings.Contains(err.Error(), "did not answer") != cluster.NoAnswer(err) {
		t.Fatalf("NoAnswer(%v) = %v", err, cluster.NoAnswer(err))
	}
	select {
	case hctx := <-p.reach:
		if _, has := hctx.Deadline(); !has {
			t.Fatal("the owner's handler ran without the caller's deadline")
		}
	case <-time.After(10 * time.Second): // a bound: the request reached the owner long ago
		t.Fatal("the request never reached the owner")
	}
	// A cancelled caller gets CANCELLED.
	cctx, ccancel := context.WithCancel(ctx)
	go func() { <-p.reach; ccancel() }()
	if _, err := p.a.Ask(cctx, "b", "block", nil); switchboard.CodeOf(err) != switchboard.CodeCancelled {
		t.Fatalf("cancelled: %v", err)
	}

	// The owner is known gone while the request is with it: UNAVAILABLE
	// at once, long before the caller's deadline.
	gctx, gcancel := context.WithTimeout(ctx, time.Hour)
	defer gcancel()
	go func() { <-p.reach; p.liveA.markGone("b") }()
	_, err = p.a.Ask(gctx, "b", "block", nil)
	if switchboard.CodeOf(err) != switchboard.CodeUnavailable || !strings.Contains(err.Error(), "replica b") || !strings.Contains(err.Error(), "is gone") || !cluster.NoAnswer(err) {
		t.Fatalf("owner gone: %v (no answer: %v)", err, cluster.NoAnswer(err))
	}
	if gctx.Err() != nil {
		t.Fatal("the ask waited for its deadline although the owner was gone")
	}
	// And an ask to a replica already gone is not sent at all.
	if _, err := p.a.Ask(ctx, "b", "echo", nil); switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("asking a gone replica: %v", err)
	}
}

func TestAskLocalBus(t *testing.T) {
	t.Parallel()
	b := bus.NewLocal()
	t.Cleanup(func() { b.Close() })
	exercise(t, newPair(t, b, b))
}

// TestAskSelf: asking this replica runs the handler in place, without the
// bus (here a closed one, which refuses every message).
func TestAskSelf(t *testing.T) {
	t.Parallel()
	b := bus.NewLocal()
	a, err := cluster.NewAsker(b, newLive("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	type key struct{}
	a.Handle("who", func(ctx context.Context, req []byte) ([]byte, error) {
		v, _ := ctx.Value(key{}).(string)
		return []byte(v + ":" + string(req)), nil
	})
	b.Close()
	got, err := a.Ask(context.WithValue(context.Background(), key{}, "caller's ctx"), "a", "who", []byte("me"))
	if err != nil || string(got) != "caller's ctx:me" {
		t.Fatalf("self-ask: %q, %v", got, err)
	}
	if _, err := a.Ask(context.Background(), "b", "who", nil); switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("another replica over the closed bus: %v", err)
	}
	if _, err := a.Ask(context.Background(), "a", "nobody", nil); switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("a kind nobody handles here: %v", err)
	}
}

// TestAskPostgresBus: the same over two Postgres buses, as two processes.
func TestAskPostgresBus(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("SWITCHBOARD_TEST_POSTGRES is not set")
	}
	rb := make([]byte, 8)
	_, _ = rand.Read(rb)
	schema := "sbask_" + hex.EncodeToString(rb)
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxConns: 2}) // creates the payload table
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	t.Cleanup(func() {
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(ctx)
		}
	})
	open := func() *bus.Postgres {
		b, err := bus.OpenPostgres(ctx, dsn, &bus.PostgresOptions{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	exercise(t, newPair(t, open(), open()))
}

// BenchmarkAskPostgres is one ask and its answer between two processes'
// Postgres buses (a request and an answer of 200 bytes):
//
//	SWITCHBOARD_TEST_POSTGRES=… go test ./internal/cluster -run '^$' -bench AskPostgres
func BenchmarkAskPostgres(b *testing.B) {
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		b.Skip("SWITCHBOARD_TEST_POSTGRES is not set")
	}
	rb := make([]byte, 8)
	_, _ = rand.Read(rb)
	schema := "sbask_" + hex.EncodeToString(rb)
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	b.Cleanup(func() {
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(ctx)
		}
	})
	asker := func(name string) *cluster.Asker {
		bb, err := bus.OpenPostgres(ctx, dsn, &bus.PostgresOptions{Schema: schema})
		if err != nil {
			b.Fatal(err)
		}
		a, err := cluster.NewAsker(bb, newLive(name), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { a.Close(); bb.Close() })
		return a
	}
	a, owner := asker("a"), asker("b")
	owner.Handle("echo", func(ctx context.Context, req []byte) ([]byte, error) { return req, nil })
	req := bytes.Repeat([]byte("x"), 200)
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.Ask(ctx, "b", "echo", req); err != nil {
			b.Fatal(err)
		}
	}
}
