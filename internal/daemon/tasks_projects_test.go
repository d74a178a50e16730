package daemon_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// A task's per-project scopes hold on either store: it may read finance
// and write design. finance.write, a tool of the read-only project, is
// never offered to the assistant and its call is TOOL_NOT_FOUND without
// running; design.write runs once approved. A project outside the owner's rights is
// dropped and the answer says so; the stored record keeps each project's
// access.
func TestTaskProjectScopes(t *testing.T) {
	t.Parallel()
	for _, db := range durables(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			st := db.open(t)
			t.Cleanup(func() { st.Close() })
			llm := modeltest.NewOpenAI(t)
			admin := daemon.NewSecret()
			d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: admin,
				Models: map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: llm.BaseURL()}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			var mu sync.Mutex
			ran := map[string]int{}
			for name, class := range map[string]switchboard.Class{"finance.read": switchboard.ClassRead, "finance.write": switchboard.ClassMutate,
				"design.read": switchboard.ClassRead, "design.write": switchboard.ClassMutate} {
				tl := switchboard.Tool{Name: name, Description: "Use " + name + ".", Class: class,
					InputSchema: json.RawMessage(`{"type":"object"}`)}
				if err := d.RegisterFunc(ctx, tl, func(context.Context, json.RawMessage) (any, error) {
					mu.Lock()
					ran[name]++
					mu.Unlock()
					return map[string]bool{"ok": true}, nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			srv := httptest.NewServer(d.Handler())
			t.Cleanup(srv.Close)
			adm := client.New(srv.URL, admin, nil)
			tok, err := adm.CreateToken(ctx, client.TokenRequest{Agent: "planner", User: "user:alice", Allow: []string{"finance.*", "design.*"}})
			if err != nil {
				t.Fatal(err)
			}
			alice := client.New(srv.URL, tok.Token, nil)
			llm.Push(
				modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c1", Name: "finance_read", Args: `{}`}}},
				modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c2", Name: "finance_write", Args: `{}`}}},
				modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "c3", Name: "design_write", Args: `{}`}}},
				modeltest.Turn{Text: "Done."},
			)
			tk, err := alice.CreateTask(ctx, client.TaskRequest{Goal: "Prepare the Q3 board pack", Envelope: switchboard.TaskEnvelope{
				Projects: []switchboard.ProjectScope{{Name: "finance", Access: switchboard.ProjectRead}, {Name: "design", Access: switchboard.ProjectWrite},
					{Name: "billing", Access: switchboard.ProjectRead}}}})
			if err != nil {
				t.Fatal(err)
			}
			if !hasNote(tk.Narrowed, "project billing is outside its owner's rights (finance.*, design.*): dropped") || len(tk.Envelope.Projects) != 2 ||
				strings.Join(tk.Projects, ",") != "finance,design,billing" {
				t.Fatalf("task %+v: want billing dropped (and said), finance and design kept", tk)
			}
			// design.write, a mutation, waits for its owner as ever.
			tk = waitTask(t, alice, tk.ID, status(switchboard.TaskInputRequired))
			if _, err := adm.Decide(ctx, tk.Steps[len(tk.Steps)-1].ApprovalID, client.Decision{Approve: true}); err != nil {
				t.Fatal(err)
			}
			tk = waitTask(t, alice, tk.ID, status(switchboard.TaskCompleted))
			stored, err := st.TaskGet(ctx, tk.ID)
			if err != nil || len(stored.Envelope.Projects) != 2 || stored.Envelope.Projects[0].Name != "finance" || stored.Envelope.Projects[0].Access != switchboard.ProjectRead ||
				stored.Envelope.Projects[1].Access != switchboard.ProjectWrite {
				t.Fatalf("stored envelope %+v (%v)", stored.Envelope, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if ran["finance.read"] != 1 || ran["finance.write"] != 0 || ran["design.write"] != 1 {
				t.Fatalf("tools ran %v: want finance.read and design.write once, finance.write never", ran)
			}
			offered := strings.Join(assistantOffered(llm, 0), ",")
			if strings.Contains(offered, "finance_write") || !strings.Contains(offered, "finance_read") || !strings.Contains(offered, "design_write") {
				t.Fatalf("the assistant was offered %s: want finance_read and design_write, not finance_write", offered)
			}
			if r := toolMessage(llm, 2); !strings.Contains(r, string(switchboard.CodeToolNotFound)) {
				t.Fatalf("the finance.write call answered %s, want TOOL_NOT_FOUND", r)
			}
		})
	}
}

func hasNote(notes []string, want string) bool {
	for _, n := range notes {
		if n == want {
			return true
		}
	}
	return false
}

// assistantOffered is the tools the model was offered in request n.
func assistantOffered(llm *modeltest.OpenAI, n int) []string {
	var names []string
	tools, _ := llm.Requests()[n]["tools"].([]any)
	for _, tl := range tools {
		f, _ := tl.(map[string]any)["function"].(map[string]any)
		name, _ := f["name"].(string)
		names = append(names, name)
	}
	return names
}

// toolMessage is the last tool message the model saw in request n.
func toolMessage(llm *modeltest.OpenAI, n int) string {
	msgs, _ := llm.Requests()[n]["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, _ := msgs[i].(map[string]any); m["role"] == "tool" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}
