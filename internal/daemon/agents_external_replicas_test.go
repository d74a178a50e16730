package daemon_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// TestExternalAgentOneSessionAcrossReplicas: an agent token whose
// requests a balancer spreads over two replicas (on Postgres, each with
// its own bus) is one agent session, whichever replica it reached first;
// every replica lists that one session (and so a panel lease, held by
// the agent session, is the agent's through either replica).
func TestExternalAgentOneSessionAcrossReplicas(t *testing.T) {
	t.Parallel()
	// Coalesced writes wait an hour: a replica's copy cannot learn of the
	// end from its own write being refused, only from the end's event.
	_, urls := pgReplicasWith(t, 2, daemon.Options{AgentSessions: workspace.AgentsOptions{FlushInterval: time.Hour}})
	ctx := context.Background()
	tok, err := client.New(urls[0], "replica-token", nil).CreateToken(ctx, client.TokenRequest{Agent: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{urls[1], urls[0], urls[1], urls[0]} {
		req, _ := http.NewRequest("GET", u+"/api/v1/digest", nil)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the agent's digest on %s: %d", u, resp.StatusCode)
		}
	}
	live := func() []string {
		t.Helper()
		var all []string
		for i, u := range urls {
			list, err := client.New(u, "replica-token", nil).Agents(ctx, client.AgentQuery{Kind: string(switchboard.AgentExternal), Active: true})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range list {
				if s.Principal == "agent:bot" {
					ids = append(ids, s.ID)
				}
			}
			if len(ids) != 1 {
				t.Fatalf("replica %d lists the agent's live sessions %v, want one across the replicas", i, ids)
			}
			all = append(all, ids[0])
		}
		if all[0] != all[1] {
			t.Fatalf("the replicas list different live sessions of the agent: %v", all)
		}
		return all
	}
	first := live()[0]
	digest := func(u string) {
		t.Helper()
		req, _ := http.NewRequest("GET", u+"/api/v1/digest", nil)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the agent's digest on %s: %d", u, resp.StatusCode)
		}
	}

	// Interrupted: both replicas read the end, and the agent's next
	// requests start one new session, not acting in the ended one.
	if s, err := client.New(urls[0], "replica-token", nil).InterruptAgent(ctx, first); err != nil || !s.Status.Final() {
		t.Fatalf("interrupt through replica 0: %+v %v", s, err)
	}
	// Whichever of the two holds the session (the last to write it) ended
	// it; the other kept a copy, which must end too.
	deadline := time.Now().Add(30 * time.Second)
	for i, u := range urls {
		for {
			s, err := client.New(u, "replica-token", nil).Agent(ctx, first)
			if err != nil {
				t.Fatal(err)
			}
			if s.Status.Final() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d still reads the interrupted session as %s", i, s.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	digest(urls[1])
	digest(urls[0])
	if now := live()[0]; now == first {
		t.Fatalf("the agent acts in its interrupted session %s", first)
	}
}
