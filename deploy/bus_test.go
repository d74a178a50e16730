package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestReplicasBus runs the issue 16 tests that need the cross-replica bus
// (three real replicas on one Postgres): a browser action whose tab, caller
// and result each sit on a different replica, and MCP list_changed reaching
// clients of every replica.
func TestReplicasBus(t *testing.T) {
	c := newCluster(t, 3)
	ctx := context.Background()

	t.Run("BrowserActionAcrossReplicas", func(t *testing.T) {
		// The tab lives on replica 0 (tabs_test.go spreads a tab's own
		// requests over the replicas too).
		cred, err := c.at(0).CreateSession(ctx, "xreplica")
		if err != nil {
			t.Fatal(err)
		}
		tabA := c.at(0).Tab(cred)
		nav := switchboard.Tool{
			Name: "nav.goto", Description: "Open a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}},"required":["page"]}`),
		}
		if _, err := tabA.Advertise(ctx, []switchboard.Tool{nav}); err != nil {
			t.Fatal(err)
		}
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := tabA.Events(sctx, "")
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		// requests are the browser.action.request events the tab reads
		// on replica 0, in order.
		requests := make(chan switchboard.BrowserActionRequest, 16)
		go func() {
			defer close(requests)
			for {
				ev, err := stream.Next()
				if err != nil {
					return
				}
				if ev.Kind != "browser.action.request" {
					continue
				}
				var req switchboard.BrowserActionRequest
				if json.Unmarshal(ev.Data, &req) == nil {
					requests <- req
				}
			}
		}()
		// Tab presence travels over the bus asynchronously: a call on
		// replica 1 before it has heard that the tab is connected on
		// replica 0 waits for that (at most 2 s); a SESSION_GONE never
		// reaches the tab, so retrying it dispatches nothing twice.
		eventually(t, 30*time.Second, "replica 1 learns of the tab on replica 0", func() (bool, string) {
			_, err := c.at(1).CallTool(ctx, "nav.goto", json.RawMessage(`{}`), client.CallOptions{SessionID: cred.SessionID})
			// Input without the required page is refused (SCHEMA_VIOLATION)
			// before dispatch
			// once the tool resolves on replica 1.
			return switchboard.CodeOf(err) == switchboard.CodeSchemaViolation, fmt.Sprint(err)
		})
		// The result goes back through replica 2, with the same session
		// token (its checks pass anywhere: sessions are in the store).
		tabC := c.at(2).Tab(cred)

		// call makes one call through replica 1 and answers it from the
		// tab: the request read on replica 0, the result POSTed to replica 2.
		call := func(page string) {
			t.Helper()
			type answer struct {
				resp switchboard.CallResponse
				err  error
			}
			done := make(chan answer, 1)
			go func() {
				resp, err := c.at(1).CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"`+page+`"}`), client.CallOptions{SessionID: cred.SessionID})
				done <- answer{resp, err}
			}()
			var req switchboard.BrowserActionRequest
			select {
			case r, ok := <-requests:
				if !ok {
					t.Fatal("the tab's stream on replica 0 ended")
				}
				req = r
			case a := <-done:
				t.Fatalf("the call through replica 1 ended before the tab on replica 0 saw it: %+v %v", a.resp, a.err)
			case <-time.After(60 * time.Second):
				t.Fatal("the call made through replica 1 did not reach the tab's stream on replica 0")
			}
			var in struct{ Page string }
			_ = json.Unmarshal(req.Input, &in)
			if req.Tool != "nav.goto" || in.Page != page {
				// Each call's request comes once, in order: a duplicate of an
				// earlier call's request would show up here.
				t.Fatalf("the tab read %s %s, want nav.goto for page %q (a request dispatched twice?)", req.Tool, req.Input, page)
			}
			result := json.RawMessage(`{"url":"/app/` + page + `","via":"replica-2"}`)
			st, err := tabC.PostResult(ctx, req.RunID, switchboard.BrowserActionResult{InvocationID: req.InvocationID, OK: true, Result: result})
			if err != nil || st != switchboard.StatusSucceeded {
				t.Fatalf("POST of the result to replica 2: %s %v", st, err)
			}
			var a answer
			select {
			case a = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("the caller on replica 1 was not answered with the result POSTed to replica 2")
			}
			if a.err != nil || a.resp.Status != switchboard.StatusSucceeded || a.resp.InvocationID != req.InvocationID {
				t.Fatalf("the call through replica 1: %+v %v", a.resp, a.err)
			}
			var got, want any
			_ = json.Unmarshal(a.resp.Result, &got)
			_ = json.Unmarshal(result, &want)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("the caller got %s, want the tab's result %s", a.resp.Result, result)
			}
			// A second POST of the same result (a tab retrying after a lost
			// answer, here on yet another replica) changes nothing.
			if st, err := c.at(1).Tab(cred).PostResult(ctx, req.RunID, switchboard.BrowserActionResult{
				InvocationID: req.InvocationID, OK: true, Result: json.RawMessage(`{"url":"/elsewhere"}`),
			}); err == nil && st != switchboard.StatusSucceeded {
				t.Fatalf("a repeated result moved the call to %s", st)
			}
			inv, err := c.at(0).GetInvocation(ctx, req.InvocationID)
			if err != nil || inv.Status != switchboard.StatusSucceeded {
				t.Fatalf("the invocation seen from replica 0: %+v %v", inv, err)
			}
			if n := callEntries(t, c.at(0))[req.InvocationID]; n != 1 {
				t.Fatalf("%s has %d tool.call ledger entries, want 1", req.InvocationID, n)
			}
		}
		call("media")
		// The next request on the stream is the next call's: the first was
		// dispatched once.
		call("settings")
	})

	t.Run("ListChangedOnEveryReplica", func(t *testing.T) {
		// One MCP client on each replica directly (an MCP session stays on
		// its replica; docs/deploy.md).
		changed := make([]chan struct{}, len(c.reps))
		sessions := make([]*mcp.ClientSession, len(c.reps))
		// Sessions (2025-11-25) and sessionless clients (2026-07-28, the
		// SDK's latest, listening with subscriptions/listen) both hear it.
		revisions := []string{"2025-11-25", ""}
		for i := range c.reps {
			ch := make(chan struct{}, 16)
			changed[i] = ch
			mc := mcp.NewClient(&mcp.Implementation{Name: "xreplica-test", Version: "1"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case ch <- struct{}{}:
					default:
					}
				},
			})
			cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{
				Endpoint:   "http://" + c.reps[i].addr + "/mcp",
				HTTPClient: &http.Client{Transport: bearer{token}},
			}, &mcp.ClientSessionOptions{ProtocolVersion: revisions[i%2]})
			if err != nil {
				t.Fatalf("MCP client on replica %d: %v", i, err)
			}
			t.Cleanup(func() { cs.Close() })
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			sessions[i] = cs
		}
		// Drop notifications of earlier changes (the previous subtest's tab
		// going away changes the tool list of replica 0's clients).
		for _, ch := range changed {
			for len(ch) > 0 {
				<-ch
			}
		}
		be := newBackend(t)
		fresh := be.tools()[0]
		fresh.Name = "xreplica.fresh"
		if _, err := c.at(1).RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{fresh}); err != nil {
			t.Fatal(err)
		}
		// Each client is told, and the listing it then asks for holds the
		// new tool. A late notification of an earlier change may come
		// first; the next one must follow.
		for i, cs := range sessions {
			deadline := time.After(60 * time.Second)
			for found := false; !found; {
				select {
				case <-changed[i]:
				case <-deadline:
					t.Fatalf("the MCP client on replica %d got no notifications/tools/list_changed followed by a listing with the tool registered through replica 1", i)
				}
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, tl := range res.Tools {
					found = found || strings.Contains(tl.Name, "xreplica")
				}
			}
		}
	})
}

// bearer adds the admin token to the MCP client's requests.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// callEntries counts the ledger's tool.call entries per invocation.
func callEntries(t *testing.T, cl *client.Client) map[string]int {
	t.Helper()
	entries := map[string]int{}
	after := "0"
	for {
		page, err := cl.Activity(context.Background(), client.ActivityQuery{After: after, Verb: "tool.call", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Items {
			var d struct {
				InvocationID string `json:"invocationId"`
			}
			_ = json.Unmarshal(e.Details, &d)
			entries[d.InvocationID]++
		}
		if len(page.Items) < 1000 {
			return entries
		}
		after = page.NextCursor
	}
}
