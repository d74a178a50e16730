package mcpserver

import (
	"net/http"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/ratelimit"
)

// RELIABILITY row 28: one principal holds at most Sessions.Max MCP
// sessions and opens them no faster than Sessions.Rate; past either,
// initialize is 429 RATE_LIMITED before a session exists. Another
// principal is not held up, and closing a session gives its seat back.
func TestSessionCapPerPrincipal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{
		Sessions: SessionLimits{Max: 2, Rate: ratelimit.Rate{PerSecond: -1}},
		Auth: authFunc(func(r *http.Request) (switchboard.Principal, error) {
			switch r.Header.Get("Authorization") {
			case "Bearer alice":
				return switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "alice"}, nil
			case "Bearer bob":
				return switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bob"}, nil
			case "Bearer alice-for-carol": // the same agent name acting for a user
				return switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "alice", User: "user:carol"}, nil
			}
			return switchboard.Principal{}, switchboard.Errorf(switchboard.CodeUnauthorized, "no")
		}),
	})
	released := make(chan string, 4)
	e.mcp.seatReleased = released
	url := e.srv.URL + "/mcp"
	var sids []string
	for range 2 {
		resp := post(t, t.Context(), url, initializeBody, "Authorization", "Bearer alice")
		drain(resp)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("alice's initialize: %s", resp.Status)
		}
		sids = append(sids, resp.Header.Get("Mcp-Session-Id"))
	}
	resp := post(t, t.Context(), url, initializeBody, "Authorization", "Bearer alice")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("alice's third session: %s %q; want 429 and no session", resp.Status, resp.Header.Get("Mcp-Session-Id"))
	}
	if code := errorCode(t, resp); code != switchboard.CodeRateLimited {
		t.Fatalf("alice's third session: %s; want RATE_LIMITED", code)
	}
	resp = post(t, t.Context(), url, initializeBody, "Authorization", "Bearer bob")
	drain(resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("bob is held up by alice's sessions: %s", resp.Status)
	}
	resp = post(t, t.Context(), url, initializeBody, "Authorization", "Bearer alice-for-carol")
	drain(resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("agent alice acting for user:carol is held up by its operator's sessions: %s", resp.Status)
	}
	// Closing one of alice's sessions gives its seat back once the SDK
	// has ended it (the seat's release waits on the session's end).
	if e.mcp.session(sids[0]) == nil {
		t.Fatal("alice's first session is not live")
	}
	r, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, nil)
	r.Header.Set("Authorization", "Bearer alice")
	r.Header.Set("Mcp-Session-Id", sids[0])
	r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	drain(res)
	if p := <-released; p != "agent:alice" || e.mcp.seats.Held("agent:alice") != 1 {
		t.Fatalf("released %s's seat; alice holds %d, want 1", p, e.mcp.seats.Held("agent:alice"))
	}
	resp = post(t, t.Context(), url, initializeBody, "Authorization", "Bearer alice")
	drain(resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("alice after closing a session: %s", resp.Status)
	}
}

// The rate: a burst of 2 a second, then RATE_LIMITED with Retry-After.
func TestSessionOpenRate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Sessions: SessionLimits{Max: -1, Rate: ratelimit.Rate{PerSecond: 0.001, Burst: 2}}})
	url := e.srv.URL + "/mcp"
	auth := "Bearer " + adminToken
	for range 2 {
		resp := post(t, t.Context(), url, initializeBody, "Authorization", auth)
		drain(resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize within the burst: %s", resp.Status)
		}
	}
	resp := post(t, t.Context(), url, initializeBody, "Authorization", auth)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("initialize past the burst: %s Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
	drain(resp)
}
