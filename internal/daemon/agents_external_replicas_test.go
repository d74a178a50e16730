package daemon_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// TestExternalAgentOneSessionAcrossReplicas: an agent token whose
// requests a balancer spreads over two replicas (on Postgres, each with
// its own bus) is one agent session, whichever replica it reached first;
// every replica lists that one session (and so a panel lease, held by
// the agent session, is the agent's through either replica).
func TestExternalAgentOneSessionAcrossReplicas(t *testing.T) {
	t.Parallel()
	_, urls := pgReplicasWith(t, 2, daemon.Options{})
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
	}

}
