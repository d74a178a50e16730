package broker_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/broker"
	"github.com/switchboardhq/switchboard/sqlite"
)

// finishing adds InvocationFinish to a real store. It is not atomic (the
// drivers' version is one transaction); it proves the broker uses the
// extension and writes no second entry.
type finishing struct {
	*sqlite.Store
	calls atomic.Int32
}

func (f *finishing) InvocationFinish(ctx context.Context, inv switchboard.Invocation, e *switchboard.ActivityEntry, from ...switchboard.Status) (switchboard.Invocation, error) {
	f.calls.Add(1)
	stored, err := f.InvocationUpdate(ctx, inv, from...)
	if err != nil {
		return stored, err
	}
	return stored, f.ActivityAppend(ctx, e)
}

var _ broker.Finisher = (*finishing)(nil)

func TestFinisherExtensionIsUsed(t *testing.T) {
	var fs *finishing
	e := newEnv(t, func(o *broker.Options) {
		fs = &finishing{Store: o.Store.(*sqlite.Store)}
		o.Store = fs
	})
	e.goTool(t, echoTool, echo)
	if _, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`)}); err != nil {
		t.Fatal(err)
	}
	if fs.calls.Load() != 1 || len(e.ledger(t)) != 1 {
		t.Fatalf("InvocationFinish calls %d, ledger entries %d; want 1, 1", fs.calls.Load(), len(e.ledger(t)))
	}
}

// TestFirstTerminalWriteWins: when another writer ends the invocation
// while the binding runs (a late tab result, an approval timeout), the
// caller gets the stored outcome, and the ledger still has one entry.
func TestFirstTerminalWriteWins(t *testing.T) {
	var id atomic.Value
	e := newEnv(t, func(o *broker.Options) { o.Store = &recordingStore{Store: o.Store, id: &id} })
	e.goTool(t, echoTool, func(ctx context.Context, in json.RawMessage) (any, error) {
		// Another writer ends the record while the handler runs.
		inv, err := e.b.Get(ctx, id.Load().(string))
		if err != nil {
			return nil, err
		}
		inv.Status, inv.Error, inv.FinishedAt = switchboard.StatusCancelled, switchboard.Errorf(switchboard.CodeCancelled, "cancelled elsewhere"), time.Now()
		if _, err := e.store.InvocationUpdate(ctx, inv, switchboard.InFlight...); err != nil {
			return nil, err
		}
		return map[string]string{"late": "result"}, nil
	})
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`)})
	wantCode(t, err, switchboard.CodeCancelled)
	if inv.Status != switchboard.StatusCancelled || len(inv.Result) != 0 {
		t.Fatalf("the later result overwrote the first terminal state: %+v", inv)
	}
	if n := len(e.ledger(t)); n != 1 {
		t.Fatalf("%d ledger entries, want 1", n)
	}
}

// recordingStore remembers the id of the last invocation created.
type recordingStore struct {
	switchboard.Store
	id *atomic.Value
}

func (r *recordingStore) InvocationCreate(ctx context.Context, inv switchboard.Invocation) error {
	r.id.Store(inv.ID)
	return r.Store.InvocationCreate(ctx, inv)
}
