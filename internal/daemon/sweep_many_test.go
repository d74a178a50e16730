package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestSweepKeepsEveryCallAwaitingApproval: a restart's sweep keeps every
// durable call awaiting approval whose approval is still owed to it, not
// only those in its first page of reads. 1,002 agent calls wait for
// approval when the daemon stops; the oldest is denied while it is down.
// After the restart the denied call ends denied (not cancelled, with its
// approval saying denied), and every other call still awaits its pending
// approval — the newest included, which a sweep reading 1,000 pending
// requests (oldest first) and 1,000 waiting calls (newest first) missed
// and ended cancelled while its approval stayed pending.
func TestSweepKeepsEveryCallAwaitingApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tool := switchboard.Tool{Name: "mail.send", Description: "Send a mail.", Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object"}`)}
	run := func(context.Context, json.RawMessage) (any, error) { return "sent", nil }
	// No rate limit and a long queue per agent: only the number of
	// waiting calls matters here.
	gov := daemon.GovernanceOptions{MaxPendingPerAgent: 2000, RateLimit: &broker.RateLimit{}}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: daemon.NewSecret(), Governance: gov})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterFunc(ctx, tool, run); err != nil {
		t.Fatal(err)
	}
	const n = 1002
	ids := make([]string, n)
	for i := range ids {
		bot := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot"}
		inv, err := d.Broker.Submit(ctx, broker.CallRequest{Tool: "mail.send", Caller: &bot, Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		if err != nil || inv.Status != switchboard.StatusAwaitingApproval {
			t.Fatalf("call %d: %+v %v", i, inv, err)
		}
		ids[i] = inv.ID
	}
	d.Close()

	oldest, err := st.InvocationGet(ctx, ids[0])
	if err != nil || oldest.ApprovalID == "" {
		t.Fatalf("the oldest call after the stop: %+v %v", oldest, err)
	}
	apr, err := st.ApprovalGet(ctx, oldest.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	apr.Status, apr.Reason, apr.DecidedBy, apr.DecidedAt = switchboard.ApprovalDenied, "not now", switchboard.Operator, time.Now()
	if _, err := st.ApprovalDecide(ctx, apr); err != nil {
		t.Fatalf("deny while the daemon is down: %v", err)
	}

	d2, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: daemon.NewSecret(), Governance: gov})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d2.Close() })
	var inv switchboard.Invocation
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if inv, err = st.InvocationGet(ctx, ids[0]); err != nil {
			t.Fatal(err)
		}
		if inv.Status.Terminal() || time.Now().After(deadline) {
			break
		}
	}
	if inv.Status != switchboard.StatusDenied {
		t.Errorf("the call denied while the daemon was down ended %s %+v; want denied, as its approval says", inv.Status, inv.Error)
	}
	for _, i := range []int{1, n / 2, n - 1} {
		inv, err := st.InvocationGet(ctx, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		a, err := st.ApprovalGet(ctx, inv.ApprovalID)
		if err != nil {
			t.Fatal(err)
		}
		if inv.Status != switchboard.StatusAwaitingApproval || a.Status != switchboard.ApprovalPending {
			t.Errorf("call %d of %d after the restart: %s %+v, its approval %s; want both still waiting", i+1, n, inv.Status, inv.Error, a.Status)
		}
	}
}
