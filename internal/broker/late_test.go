package broker_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/storetest"
)

// counting counts the store's record writes.
type counting struct {
	switchboard.Store
	creates, createFinished, finishes atomic.Int32
}

func (c *counting) InvocationCreate(ctx context.Context, inv switchboard.Invocation) error {
	c.creates.Add(1)
	return c.Store.InvocationCreate(ctx, inv)
}

func (c *counting) InvocationCreateFinished(ctx context.Context, inv switchboard.Invocation, e *switchboard.ActivityEntry) error {
	c.createFinished.Add(1)
	return c.Store.InvocationCreateFinished(ctx, inv, e)
}

func (c *counting) InvocationFinish(ctx context.Context, inv switchboard.Invocation, e *switchboard.ActivityEntry, from ...switchboard.Status) (switchboard.Invocation, error) {
	c.finishes.Add(1)
	return c.Store.InvocationFinish(ctx, inv, e, from...)
}

func (c *counting) counts() [3]int32 {
	return [3]int32{c.creates.Load(), c.createFinished.Load(), c.finishes.Load()}
}

// A read that ends before RecordAfter is recorded once, at its end: one
// InvocationCreateFinished (record, outcome and ledger entry in one
// transaction) and nothing else; the record reads back terminal.
func TestFastReadIsOneTransaction(t *testing.T) {
	var cs *counting
	e := newEnv(t, func(o *broker.Options) {
		cs = &counting{Store: o.Store}
		o.Store = cs
		o.RecordAfter = broker.DefaultTimeout // surely ends sooner, however loaded the machine
	})
	e.goTool(t, echoTool, echo)
	var onRecord []switchboard.Status
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`),
		OnRecord: func(inv switchboard.Invocation) { onRecord = append(onRecord, inv.Status) }, Caller: &operator})
	if err != nil || inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("call: %+v %v", inv, err)
	}
	if got := cs.counts(); got != [3]int32{0, 1, 0} {
		t.Fatalf("creates, create-finished, finishes = %v; want [0 1 0]", got)
	}
	stored, err := e.store.InvocationGet(context.Background(), inv.ID)
	if err != nil || stored.Status != switchboard.StatusSucceeded || string(stored.Result) != `{"echo":"x"}` {
		t.Fatalf("stored: %+v %v", stored, err)
	}
	if es := e.ledger(t); len(es) != 1 {
		t.Fatalf("%d tool.call entries, want 1", len(es))
	}
	if len(onRecord) != 1 || onRecord[0] != switchboard.StatusSucceeded {
		t.Fatalf("OnRecord heard %v; want once, with the terminal record", onRecord)
	}
}

// RELIABILITY row 13: a mutate call's started record is committed before
// its function is reached, whatever RecordAfter says; so is a read's when
// RecordAfter is negative.
func TestMutateIsRecordedBeforeItRuns(t *testing.T) {
	for _, tc := range []struct {
		name        string
		class       switchboard.Class
		recordAfter int64
	}{
		{"mutate", switchboard.ClassMutate, int64(broker.DefaultTimeout)},
		{"read with RecordAfter < 0", switchboard.ClassRead, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cs *counting
			e := newEnv(t, func(o *broker.Options) {
				cs = &counting{Store: o.Store}
				o.Store = cs
				o.RecordAfter = broker.DefaultTimeout
				if tc.recordAfter < 0 {
					o.RecordAfter = -1
				}
			})
			tool := echoTool
			tool.Class = tc.class
			var seen switchboard.Invocation
			var seenErr error
			e.goTool(t, tool, func(ctx context.Context, in json.RawMessage) (any, error) {
				all, err := e.store.InvocationList(ctx, switchboard.InvocationFilter{})
				if len(all) == 1 {
					seen = all[0]
				}
				seenErr = err
				return "ok", nil
			})
			inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`), Caller: &operator})
			if err != nil {
				t.Fatal(err)
			}
			if seenErr != nil || seen.ID != inv.ID || seen.Status != switchboard.StatusDispatched {
				t.Fatalf("while the function ran the store held %+v (%v); want the call's dispatched record", seen, seenErr)
			}
			if got := cs.counts(); got != [3]int32{1, 0, 1} {
				t.Fatalf("creates, create-finished, finishes = %v; want [1 0 1]", got)
			}
		})
	}
}

// A read that runs past RecordAfter gets its started record while it
// runs (so a crash then leaves a record), then ends with InvocationFinish;
// one ledger entry.
func TestSlowReadIsRecordedWhileItRuns(t *testing.T) {
	var cs *counting
	created := make(chan struct{})
	var id atomic.Value
	e := newEnv(t, func(o *broker.Options) {
		cs = &counting{Store: &recordingStore{Store: o.Store, id: &id, created: created}}
		o.Store = cs
		o.RecordAfter = 1 // the timer fires while the handler waits for it
	})
	var heard []switchboard.Status
	e.goTool(t, echoTool, func(ctx context.Context, in json.RawMessage) (any, error) {
		<-created // the started record is committed: the handler may end
		return "slow", nil
	})
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`),
		OnRecord: func(inv switchboard.Invocation) { heard = append(heard, inv.Status) }, Caller: &operator})
	if err != nil || inv.Status != switchboard.StatusSucceeded || id.Load() != inv.ID {
		t.Fatalf("call: %+v %v (created %v)", inv, err, id.Load())
	}
	if got := cs.counts(); got != [3]int32{1, 0, 1} {
		t.Fatalf("creates, create-finished, finishes = %v; want [1 0 1]", got)
	}
	if len(heard) != 1 || heard[0] != switchboard.StatusDispatched {
		t.Fatalf("OnRecord heard %v; want once, dispatched", heard)
	}
	if es := e.ledger(t); len(es) != 1 {
		t.Fatalf("%d tool.call entries, want 1", len(es))
	}
}

// RELIABILITY row 17 on the one-transaction path: a busy store on the
// write is retried; the call succeeds with one record and one entry.
func TestFastReadRetriesAStoreFault(t *testing.T) {
	e := newEnv(t, func(o *broker.Options) {
		o.Store = &storetest.Faulty{Store: o.Store, FailNext: storetest.FailTimes("InvocationCreateFinished", 2, storetest.Busy("invocation create finished"))}
		o.RecordAfter = broker.DefaultTimeout
	})
	e.goTool(t, echoTool, echo)
	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "test.echo", Input: json.RawMessage(`{"msg":"x"}`), Caller: &operator})
	if err != nil || inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("call: %+v %v", inv, err)
	}
	if got, err := e.store.InvocationGet(context.Background(), inv.ID); err != nil || got.Status != switchboard.StatusSucceeded {
		t.Fatalf("stored: %+v %v", got, err)
	}
	if es := e.ledger(t); len(es) != 1 {
		t.Fatalf("%d tool.call entries, want 1", len(es))
	}
}
