package daemon_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// openDaemon starts a daemon over st with a counting Go tool, test.echo.
func openDaemon(t *testing.T, st switchboard.Store, runs *atomic.Int32) *daemon.Daemon {
	t.Helper()
	ctx := context.Background()
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: restartToken})
	if err != nil {
		t.Fatal(err)
	}
	err = d.RegisterFunc(ctx, switchboard.Tool{
		Name: "test.echo", Description: "Echo the input back.", Class: switchboard.ClassMutate,
		InputSchema: []byte(`{"type":"object"}`),
	}, func(_ context.Context, in json.RawMessage) (any, error) {
		runs.Add(1)
		return in, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// RELIABILITY: issue 14 item 1. The start-up sweep releases an
// idempotency key that names no invocation (an older daemon's SIGKILL
// between its claim and its record): the caller's retry with the key then
// runs the call once, instead of CONFLICT "still in flight" for 24 hours.
// A key whose invocation exists is kept.
func TestStartupReleasesOrphanKeys(t *testing.T) {
	for _, db := range durables(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			var runs atomic.Int32
			input := json.RawMessage(`{"n":1}`)
			st := db.open(t)
			d := openDaemon(t, st, &runs)
			kept, err := d.Broker.Call(ctx, broker.CallRequest{Tool: "test.echo", Input: input, IdempotencyKey: "kept", Caller: &operator})
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			st.Close()

			db.exec(t, `INSERT INTO idempotency_keys (scope, key, digest, invocation_id, created_at) VALUES (?, ?, ?, ?, `+db.now+`)`,
				operator.Key(), "orphan", "digest-of-a-call-never-recorded", broker.NewID())
			st = db.open(t)
			defer st.Close()
			if _, err := st.IdempotencyGet(ctx, operator.Key(), "orphan"); err != nil {
				t.Fatalf("the seeded orphan: %v", err)
			}
			d = openDaemon(t, st, &runs)
			defer d.Close()
			if _, err := st.IdempotencyGet(ctx, operator.Key(), "orphan"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
				t.Fatalf("the orphan after start: %v; want it released", err)
			}
			inv, err := d.Broker.Call(ctx, broker.CallRequest{Tool: "test.echo", Input: input, IdempotencyKey: "orphan", Caller: &operator})
			if err != nil || inv.Status != switchboard.StatusSucceeded || runs.Load() != 2 {
				t.Fatalf("the retry of the orphan's call: %+v %v (runs %d)", inv, err, runs.Load())
			}
			again, err := d.Broker.Call(ctx, broker.CallRequest{Tool: "test.echo", Input: input, IdempotencyKey: "kept", Caller: &operator})
			if err != nil || again.ID != kept.ID || runs.Load() != 2 {
				t.Fatalf("the kept key replays: %+v %v (runs %d)", again, err, runs.Load())
			}
		})
	}
}

// operator is the caller of the tests' calls: the workspace's administrator.
var operator = switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}
