package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestReplicasTab runs a tab whose every request may reach a different
// replica (issue 16): three real replicas on one Postgres, the tab's
// advertisement, stream, context report, result and end each on another,
// first placed by hand and then through the round-robin proxy with no
// stickiness at all.
func TestReplicasTab(t *testing.T) {
	c := newCluster(t, 3)
	ctx := context.Background()
	nav := switchboard.Tool{Name: "nav.goto", Description: "Open a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}},"required":["page"]}`)}
	scroll := switchboard.Tool{Name: "ui.scroll_to", Description: "Scroll to an element.", Class: switchboard.ClassUI, ViewStateOnly: true,
		InputSchema: json.RawMessage(`{"type":"object"}`)}

	t.Run("Placed", func(t *testing.T) {
		a, b, cc := c.at(0), c.at(1), c.at(2)
		cred, err := cc.CreateSession(ctx, "user:alice")
		if err != nil {
			t.Fatal(err)
		}
		// The advertisement lands on b, before any stream.
		if _, err := b.Tab(cred).Advertise(ctx, []switchboard.Tool{nav}); err != nil {
			t.Fatal(err)
		}
		// The stream on a; a call through c at once (no wait for the
		// replicas to hear of the stream): answered by the tab.
		tab := newTabStream(t, a.Tab(cred))
		answer := tab.call(cc, b.Tab(cred), cred.SessionID, "nav.goto", "media")
		if answer.Status != switchboard.StatusSucceeded {
			t.Fatalf("the call through c: %+v", answer)
		}

		// The contexts PUT through b appear in the digest on c and on a.
		putContexts(t, "http://"+c.reps[1].addr, cred, "plan")
		for _, i := range []int{2, 0} {
			eventually(t, 30*time.Second, fmt.Sprintf("the digest on replica %d shows the tab's context", i), func() (bool, string) {
				ids := digestContexts(t, c.at(i))
				return len(ids) == 1 && ids[0] == "plan", fmt.Sprint(ids)
			})
		}

		// A new advertisement through c: the stream's replica serves it
		// and every replica lists and shows the tab alike.
		if _, err := cc.Tab(cred).Advertise(ctx, []switchboard.Tool{nav, scroll}); err != nil {
			t.Fatal(err)
		}
		for i := range c.reps {
			eventually(t, 30*time.Second, fmt.Sprintf("replica %d lists the tab, connected, with both tools", i), func() (bool, string) {
				list, err := c.at(i).Sessions(ctx)
				if err != nil || len(list) != 1 {
					return false, fmt.Sprint(list, err)
				}
				s := list[0]
				return s.ID == cred.SessionID && s.State == switchboard.TabConnected && len(s.Tools) == 2 && s.Replica != "" &&
					len(s.Contexts) == 1, fmt.Sprintf("%+v", s)
			})
			info, err := c.at(i).Session(ctx, cred.SessionID)
			if err != nil || info.State != switchboard.TabConnected || len(info.Tools) != 2 || len(info.Contexts) != 1 {
				t.Fatalf("replica %d shows %+v %v", i, info, err)
			}
		}
		if answer := tab.call(a, cc.Tab(cred), cred.SessionID, "ui.scroll_to", ""); answer.Status != switchboard.StatusSucceeded {
			t.Fatalf("a call of the tool advertised through c: %+v", answer)
		}

		// Ending the session through b closes the stream held by a.
		if err := b.CloseSession(ctx, cred.SessionID); err != nil {
			t.Fatal(err)
		}
		tab.waitClosed(t)
		for i := range c.reps {
			if info, err := c.at(i).Session(ctx, cred.SessionID); err != nil || info.State != switchboard.TabClosed {
				t.Fatalf("replica %d after the end: %+v %v", i, info, err)
			}
		}
	})

	t.Run("RoundRobin", func(t *testing.T) {
		lb := c.lb()
		cred, err := lb.CreateSession(ctx, "user:bob")
		if err != nil {
			t.Fatal(err)
		}
		tabLB := lb.Tab(cred)
		tab := newTabStream(t, tabLB)
		if _, err := tabLB.Advertise(ctx, []switchboard.Tool{nav}); err != nil {
			t.Fatal(err)
		}
		// Each call goes round the replicas; each is answered by the tab.
		for _, page := range []string{"a", "b", "c", "d"} {
			start := time.Now()
			answer := tab.call(lb, tabLB, cred.SessionID, "nav.goto", page)
			t.Logf("call %s answered in %s", page, time.Since(start))
			if answer.Status != switchboard.StatusSucceeded {
				t.Fatalf("call %s: %+v", page, answer)
			}
		}
		putContexts(t, c.proxy.URL, cred, "inbox")
		eventually(t, 30*time.Second, "every digest shows the tab's context", func() (bool, string) {
			for range c.reps {
				if ids := digestContexts(t, lb); len(ids) != 1 || ids[0] != "inbox" {
					return false, fmt.Sprint(ids)
				}
			}
			return true, ""
		})
		for range c.reps {
			info, err := lb.Session(ctx, cred.SessionID)
			if err != nil || info.State != switchboard.TabConnected || len(info.Tools) != 1 {
				t.Fatalf("show through the balancer: %+v %v", info, err)
			}
		}
		// The stream drops with a call in flight and reconnects to another
		// replica: the call is delivered on the new stream and answered.
		done := make(chan error, 1)
		go func() {
			resp, err := lb.CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"moved"}`), client.CallOptions{SessionID: cred.SessionID})
			if err == nil && resp.Status != switchboard.StatusSucceeded {
				err = fmt.Errorf("status %s: %v", resp.Status, resp.Error)
			}
			done <- err
		}()
		select {
		case <-tab.requests:
		case <-time.After(60 * time.Second):
			t.Fatal("the call did not reach the first stream")
		}
		from := c.holder(t, cred.SessionID)
		tab.stop()
		tab.waitClosed(t)
		to := (from + 1) % len(c.reps)
		tab = newTabStream(t, c.at(to).Tab(cred))
		if got := c.holder(t, cred.SessionID); got != to {
			t.Fatalf("the stream reconnected to replica %d is recorded on %d", to, got)
		}
		select {
		case req := <-tab.requests:
			if _, err := tabLB.PostResult(ctx, req.RunID, switchboard.BrowserActionResult{InvocationID: req.InvocationID, OK: true,
				Result: json.RawMessage(`{"page":"moved"}`)}); err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the call in flight was not delivered on the reconnected stream")
		}
		if err := <-done; err != nil {
			t.Fatalf("the call across the reconnect: %v", err)
		}

		start := time.Now()
		if err := tabLB.Close(ctx); err != nil {
			t.Fatal(err)
		}
		tab.waitClosed(t)
		t.Logf("the stream ended %s after the end", time.Since(start))
	})
}

// tabStream is a tab's event stream read in the background.
type tabStream struct {
	requests chan switchboard.BrowserActionRequest
	closed   chan struct{}
	stop     context.CancelFunc // drops the stream, as a network blip does
}

func newTabStream(t *testing.T, tab *client.Tab) *tabStream {
	t.Helper()
	sctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := tab.Events(sctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ts := &tabStream{requests: make(chan switchboard.BrowserActionRequest, 16), closed: make(chan struct{}), stop: cancel}
	go func() {
		defer close(ts.closed)
		defer stream.Close()
		for {
			ev, err := stream.Next()
			if err != nil {
				return
			}
			var req switchboard.BrowserActionRequest
			if ev.Kind == "browser.action.request" && json.Unmarshal(ev.Data, &req) == nil {
				ts.requests <- req
			}
		}
	}()
	return ts
}

// call makes a call of tool (with {"page": page}) through caller and
// answers it, as the tab, through answerer.
func (ts *tabStream) call(caller *client.Client, answerer *client.Tab, session, tool, page string) switchboard.CallResponse {
	type answer struct {
		resp switchboard.CallResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := caller.CallTool(context.Background(), tool, json.RawMessage(`{"page":"`+page+`"}`), client.CallOptions{SessionID: session})
		done <- answer{resp, err}
	}()
	select {
	case req := <-ts.requests:
		var in struct{ Page string }
		_ = json.Unmarshal(req.Input, &in)
		if req.Tool != tool || in.Page != page {
			return switchboard.CallResponse{Status: switchboard.Status("wrong-request:" + string(req.Input))}
		}
		if _, err := answerer.PostResult(context.Background(), req.RunID, switchboard.BrowserActionResult{
			InvocationID: req.InvocationID, OK: true, Result: json.RawMessage(`{"page":"` + page + `"}`)}); err != nil {
			return switchboard.CallResponse{Status: switchboard.Status("post-failed:" + err.Error())}
		}
	case a := <-done:
		return switchboard.CallResponse{Status: switchboard.Status(fmt.Sprintf("ended-before-the-tab-saw-it:%+v:%v", a.resp, a.err))}
	case <-time.After(60 * time.Second):
		return switchboard.CallResponse{Status: "never-reached-the-tab"}
	}
	select {
	case a := <-done:
		if a.err != nil {
			return switchboard.CallResponse{Status: switchboard.Status("error:" + a.err.Error())}
		}
		return a.resp
	case <-time.After(60 * time.Second):
		return switchboard.CallResponse{Status: "not-answered"}
	}
}

func (ts *tabStream) waitClosed(t *testing.T) {
	t.Helper()
	select {
	case <-ts.closed:
	case <-time.After(60 * time.Second):
		t.Fatal("the tab's stream did not end when its session was ended")
	}
}

// holder is the index of the replica the store records as holding session
// id's stream (-1: none).
func (c *cluster) holder(t *testing.T, id string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var addr string
	err = conn.QueryRow(ctx, `SELECT r.addr FROM sessions s JOIN replicas r ON r.id = s.stream WHERE s.id = $1`, id).Scan(&addr)
	if err != nil {
		return -1
	}
	for i, r := range c.reps {
		if r.addr == addr {
			return i
		}
	}
	return -1
}

// putContexts reports one focused context as the tab, through base.
func putContexts(t *testing.T, base string, cred client.SessionCredentials, id string) {
	t.Helper()
	body := map[string]any{"contexts": []map[string]any{{"id": id, "kind": "page", "label": "Page " + id, "attention": "focused", "panels": []any{}}}}
	if err := client.New(base, cred.SessionToken, nil).Do(context.Background(), http.MethodPut, "/api/v1/sessions/"+cred.SessionID+"/context", body, nil); err != nil {
		t.Fatal(err)
	}
}

// digestContexts is the ids of the contexts in the admin's digest.
func digestContexts(t *testing.T, cl *client.Client) []string {
	t.Helper()
	var d switchboard.WorkspaceDigest
	if err := cl.Do(context.Background(), http.MethodGet, "/api/v1/digest", nil, &d); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, c := range d.Contexts {
		ids = append(ids, c.ID)
	}
	return ids
}
