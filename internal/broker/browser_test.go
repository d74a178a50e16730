package broker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/schema"
)

// tab stands in for the session package behind the Browser seam: it
// advertises one tool and answers by writing the terminal record itself
// with the ledger entry the broker builds (Target.Entry), in one
// transaction, as the result POST path does.
type tab struct {
	store  switchboard.Store
	tool   switchboard.Tool
	answer func(inv switchboard.Invocation, t broker.Target) (switchboard.Invocation, error)
}

func (b *tab) Resolve(_ context.Context, tool, sessionID, _ string, _ func(switchboard.Tool) bool) (broker.Target, error) {
	if tool != b.tool.Name {
		return broker.Target{}, switchboard.Errorf(switchboard.CodeToolUnavailable, "no live session advertises %s", tool)
	}
	in, err := schema.Compile(b.tool.InputSchema)
	return broker.Target{SessionID: "tab-1", Tool: b.tool, Input: in}, err
}

func (b *tab) Await(ctx context.Context, inv switchboard.Invocation, t broker.Target) (switchboard.Invocation, error) {
	return b.answer(inv, t)
}

var scrollTool = switchboard.Tool{
	Name: "view.scroll", Description: "Scroll the page.", Surface: switchboard.SurfaceBrowser,
	Class: switchboard.ClassUI, ViewStateOnly: true,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"enum":["top","bottom"]}},"required":["to"]}`),
}

func TestBrowserToolThroughTheSeam(t *testing.T) {
	var tb *tab
	e := newEnv(t, func(o *broker.Options) {
		tb = &tab{store: o.Store, tool: scrollTool}
		o.Browser = tb
	})
	observed := 0
	tb.answer = func(inv switchboard.Invocation, tg broker.Target) (switchboard.Invocation, error) {
		if inv.Status != switchboard.StatusDispatched || inv.SessionID != "tab-1" || inv.RunID == "" {
			t.Errorf("dispatched record = %+v", inv)
		}
		if tg.Entry == nil || tg.Observe == nil {
			t.Fatal("the broker set no Target.Entry or Target.Observe")
		}
		inv.Status, inv.Result, inv.FinishedAt = switchboard.StatusSucceeded, json.RawMessage(`{"scrolled":true}`), time.Now()
		e := tg.Entry(inv)
		stored, err := tb.store.InvocationFinish(context.Background(), inv, e, switchboard.InFlight...)
		if err == nil {
			observed++
			tg.Observe(*e)
		}
		return stored, err
	}
	_, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"left"}`)})
	wantCode(t, err, switchboard.CodeSchemaViolation) // the live schema applies

	inv, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"top"}`)})
	if err != nil || string(inv.Result) != `{"scrolled":true}` {
		t.Fatalf("%+v %v", inv, err)
	}
	if es := e.ledger(t); len(es) != 1 || observed != 1 || string(es[0].Provenance) != `{"derivedFrom":"site-html"}` {
		t.Fatalf("%d ledger entries (observed %d); want 1, the tab's, marked as site data", len(es), observed)
	}

	// A tab that vanishes without writing: the broker records the error.
	tb.answer = func(inv switchboard.Invocation, _ broker.Target) (switchboard.Invocation, error) {
		return switchboard.Invocation{}, switchboard.Errorf(switchboard.CodeSessionGone, "the tab closed")
	}
	inv, err = e.b.Call(context.Background(), broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"top"}`)})
	wantCode(t, err, switchboard.CodeSessionGone)
	terminal(t, e, inv.ID, switchboard.StatusFailed, switchboard.CodeSessionGone)

	_, err = e.b.Call(context.Background(), broker.CallRequest{Tool: "view.zoom"})
	wantCode(t, err, switchboard.CodeToolNotFound)
}

func TestBrowserToolWithoutBrowser(t *testing.T) {
	e := newEnv(t, nil)
	e.register(t, scrollTool)
	_, err := e.b.Call(context.Background(), broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"top"}`)})
	wantCode(t, err, switchboard.CodeToolUnavailable)
}
