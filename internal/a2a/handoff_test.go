package a2a_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// A second switchboard receives a handoff as an A2A task: agents.handoff
// on daemon A with B's URL sends the task to B's /a2a with the token B
// issued to A; B runs it for that token's user, its envelope narrowed to
// the token's scope (the handoff asked for more), and completes it. A URL
// that is not a configured peer is FORBIDDEN.
func TestHandoffToAnotherSwitchboard(t *testing.T) {
	b := newEnv(t)
	tok, err := b.admin.CreateToken(context.Background(), client.TokenRequest{Agent: "switchboard-a", User: "user:carol", Allow: []string{"finance.*"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SB_TEST_PEER_TOKEN", tok.Token)
	b.model.Push(modeltest.Turn{Text: "Q3 revenue was 120."})

	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	adminA := daemon.NewSecret()
	a, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: adminA,
		A2APeers: []daemon.A2APeer{{URL: b.srv.URL + "/", TokenEnv: "SB_TEST_PEER_TOKEN"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	srvA := httptest.NewServer(a.Handler())
	t.Cleanup(srvA.Close)
	ca := client.New(srvA.URL, adminA, nil)

	in, _ := json.Marshal(map[string]any{"to": b.srv.URL, "task": "Summarise Q3 finance",
		"scope": map[string]any{"allow": []string{"finance.*", "billing.*"}}})
	res, err := ca.CallTool(ctx, "agents.handoff", in, client.CallOptions{})
	if err != nil || res.Status != switchboard.StatusSucceeded {
		t.Fatalf("handoff: %+v %v", res, err)
	}
	var h switchboard.AgentHandoff
	if err := json.Unmarshal(res.Result, &h); err != nil {
		t.Fatal(err)
	}
	var remote struct {
		TaskID string `json:"taskId"`
		Agent  string `json:"agent"`
	}
	if err := json.Unmarshal(h.Remote, &remote); err != nil || remote.TaskID == "" || remote.Agent != "switchboard assistant" {
		t.Fatalf("the handoff's remote task: %s (%v)", h.Remote, err)
	}
	deadline, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var tk switchboard.Task
	for {
		if tk, err = b.admin.Task(deadline, remote.TaskID); err != nil {
			t.Fatal(err)
		}
		if tk.Status.Terminal() {
			break
		}
		select {
		case <-deadline.Done():
			t.Fatalf("B's task never ended: %+v", tk)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if tk.Status != switchboard.TaskCompleted || tk.Owner != "user:carol" || tk.Creator != "agent:switchboard-a" ||
		tk.Goal != "Summarise Q3 finance" || strings.Join(tk.Envelope.Allow, ",") != "finance.*" || len(tk.Narrowed) == 0 ||
		len(tk.Artifacts) != 1 || tk.Artifacts[0].Text != "Q3 revenue was 120." {
		t.Fatalf("B's task: %+v", tk)
	}

	in, _ = json.Marshal(map[string]any{"to": "http://127.0.0.1:1/elsewhere", "task": "x"})
	if _, err := ca.CallTool(ctx, "agents.handoff", in, client.CallOptions{}); switchboard.CodeOf(err) != switchboard.CodeForbidden {
		t.Fatalf("a handoff to an unconfigured URL: %v, want FORBIDDEN", err)
	}
}
