package broker_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/sqlite"
)

// finishing counts the store's InvocationFinish and InvocationUpdate calls.
type finishing struct {
	*sqlite.Store
	finishes, updates atomic.Int32
}

func (f *finishing) InvocationFinish(ctx context.Context, inv switchboard.Invocation, e *switchboard.ActivityEntry, from ...switchboard.Status) (switchboard.Invocation, error) {
	f.finishes.Add(1)
	return f.Store.InvocationFinish(ctx, inv, e, from...)
}

func (f *finishing) InvocationUpdate(ctx context.Context, inv switchboard.Invocation, from ...switchboard.Status) (switchboard.Invocation, error) {
	if inv.Status.Terminal() {
		f.updates.Add(1)
	}
	return f.Store.InvocationUpdate(ctx, inv, from...)
}

// TestFinishIsOneWrite: a call's outcome and its ledger entry are written
// by one InvocationFinish, never by a terminal InvocationUpdate and a
// separate append. (RecordAfter < 0 records the read before it runs, as
// every mutate call is; late_test.go has the read recorded at its end.)
func TestFinishIsOneWrite(t *testing.T) {
	var fs *finishing
	e := newEnv(t, func(o *broker.Options) {
		fs = &finishing{Store: o.Store.(*sqlite.Store)}
		o.Store = fs
		o.RecordAfter = -1
	})
	e.goTool(t, echoTool, echo)
	if _, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`), Caller: &operator}); err != nil {
		t.Fatal(err)
	}
	if fs.finishes.Load() != 1 || fs.updates.Load() != 0 || len(e.ledger(t)) != 1 {
		t.Fatalf("InvocationFinish calls %d, terminal InvocationUpdate calls %d, ledger entries %d; want 1, 0, 1",
			fs.finishes.Load(), fs.updates.Load(), len(e.ledger(t)))
	}
}

// TestFirstTerminalWriteWins: when another writer ends the invocation
// while the binding runs (a survivor's sweep of a replica taken for dead
// while it still ran, a tab's answer), writing its ledger entry with it,
// the caller gets the stored outcome, and the ledger has that one entry:
// the finish that lost writes none. The
// tool is a read, so its record is written while it runs (RecordAfter):
// the handler waits for that, which also shows a slow read is recorded
// before it ends.
func TestFirstTerminalWriteWins(t *testing.T) {
	var id atomic.Value
	created := make(chan struct{})
	e := newEnv(t, func(o *broker.Options) {
		o.Store = &recordingStore{Store: o.Store, id: &id, created: created}
	})
	e.goTool(t, echoTool, func(ctx context.Context, in json.RawMessage) (any, error) {
		<-created
		// Another writer ends the record while the handler runs.
		inv, err := e.b.Get(ctx, id.Load().(string))
		if err != nil {
			return nil, err
		}
		inv.Status, inv.Error, inv.FinishedAt = switchboard.StatusFailed, switchboard.Errorf(switchboard.CodeOutcomeUnknown, "swept elsewhere"), time.Now()
		if _, err := e.store.InvocationFinish(ctx, inv, broker.SweptEntry(inv), switchboard.InFlight...); err != nil {
			return nil, err
		}
		return map[string]string{"late": "result"}, nil
	})
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`), Caller: &operator})
	wantCode(t, err, switchboard.CodeOutcomeUnknown)
	if inv.Status != switchboard.StatusFailed || len(inv.Result) != 0 {
		t.Fatalf("the later result overwrote the first terminal state: %+v", inv)
	}
	if n := len(e.ledger(t)); n != 1 {
		t.Fatalf("%d ledger entries, want 1", n)
	}
}

// recordingStore remembers the id of the last invocation created and
// closes created after the first create.
type recordingStore struct {
	switchboard.Store
	id      *atomic.Value
	created chan struct{}
	once    sync.Once
}

func (r *recordingStore) InvocationCreate(ctx context.Context, inv switchboard.Invocation) error {
	r.id.Store(inv.ID)
	err := r.Store.InvocationCreate(ctx, inv)
	if err == nil && r.created != nil {
		r.once.Do(func() { close(r.created) })
	}
	return err
}
