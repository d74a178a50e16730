package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/panel"
)

// TestPanelLeaseFollowsExternalAgentAcrossReplicas: an external agent's
// panel lease belongs to its one agent session across replicas (on
// Postgres, each with its own bus). The tab is on replica A; the agent
// that leased its panel through A goes on editing it through B, another
// agent is refused LEASE_HELD through either, and once the holder's
// session is interrupted — through the replica that does not hold the
// tab, and then through the one that does — the other agent takes the
// panel.
func TestPanelLeaseFollowsExternalAgentAcrossReplicas(t *testing.T) {
	t.Parallel()
	ds, urls := pgReplicasWith(t, 2, daemon.Options{})
	ctx := context.Background()
	tab, err := ds[0].Sessions.Create(ctx, "user:1")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ds[0].Sessions.Attach(ctx, tab.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	ds[0].Panels.Attach(ctx, tab.SessionID)
	res, err := ds[0].Panels.Compose(ctx, panel.ComposeRequest{Spec: json.RawMessage(listSpec), SessionID: tab.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	id := res.InstanceID
	token := func(agent string) string {
		t.Helper()
		tok, err := client.New(urls[0], "replica-token", nil).CreateToken(ctx, client.TokenRequest{Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}
	do := func(base, tok, method, path, body string) (int, map[string]any) {
		t.Helper()
		return bearerJSON(t, base, tok, method, path, body)
	}
	fill := func(base, tok, title string) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"input": map[string]any{"instanceId": id, "values": map[string]any{"title": title}}})
		return do(base, tok, "POST", "/api/v1/tools/"+panel.ToolFill+"/call", string(b))
	}
	// leases asserts a fill of tok's through base is its own lease and
	// returns the holding agent session.
	leases := func(base, tok, principal string) string {
		t.Helper()
		code, body := fill(base, tok, principal+" was here")
		res, _ := body["result"].(map[string]any)
		l, _ := res["lease"].(map[string]any)
		if code != http.StatusOK || l["principal"] != principal {
			t.Fatalf("%s's fill through %s: %d %v, want its own lease", principal, base, code, body)
		}
		return l["agentId"].(string)
	}
	refused := func(base, tok, holder string) {
		t.Helper()
		code, body := fill(base, tok, "not mine")
		details, _ := body["error"].(map[string]any)["details"].(map[string]any)
		if code != http.StatusConflict || panelErrCode(body) != "LEASE_HELD" || details["agentId"] != holder {
			t.Fatalf("a fill through %s while %s holds the panel: %d %v, want 409 LEASE_HELD naming it", base, holder, code, body)
		}
	}
	interrupt := func(base, holder string) {
		t.Helper()
		if code, body := do(base, "replica-token", "POST", "/api/v1/agents/"+holder+"/interrupt", ""); code != http.StatusOK || body["status"] != "cancelled" {
			t.Fatalf("interrupt %s through %s: %d %v", holder, base, code, body)
		}
	}
	// takes waits for the released lease to let tok's fill through base
	// (a release on the replica holding the tab may follow the session's
	// end there over the bus) and returns the new holder.
	takes := func(base, tok, principal string) string {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			code, body := fill(base, tok, principal+" took over")
			if code == http.StatusOK {
				return body["result"].(map[string]any)["lease"].(map[string]any)["agentId"].(string)
			}
			if code != http.StatusConflict || panelErrCode(body) != "LEASE_HELD" || time.Now().After(deadline) {
				t.Fatalf("%s's fill through %s after the holder's session ended: %d %v", principal, base, code, body)
			}
			time.Sleep(100 * time.Millisecond) // under the agent's tool rate limit
		}
	}
	a, b := urls[0], urls[1]
	bot, other := token("bot"), token("other")

	held := leases(a, bot, "agent:bot")
	if again := leases(b, bot, "agent:bot"); again != held {
		t.Fatalf("the agent's fill through B holds the lease as %s, want its one session %s", again, held)
	}
	refused(a, other, held)
	refused(b, other, held)
	// The holder's session ends through the replica that does not hold
	// the tab; the lease is released where it lives.
	interrupt(b, held)
	taken := takes(a, other, "agent:other")
	if taken == held {
		t.Fatalf("the other agent's lease names the ended session %s", held)
	}
	refused(a, bot, taken)
	refused(b, bot, taken)
	if again := leases(b, other, "agent:other"); again != taken {
		t.Fatalf("the other agent's fill through B holds the lease as %s, want %s", again, taken)
	}
	// And through the replica that holds the tab.
	interrupt(a, taken)
	takes(b, bot, "agent:bot")
}
