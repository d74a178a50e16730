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
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// handingDaemon is switchboard A: a daemon over an SQLite file whose
// assistant talks to model, with B (at peer) as its one A2A peer. Each
// call starts it again over the same file (a restart).
type handingDaemon struct {
	path, peer, token string
	model             *modeltest.OpenAI
}

func (h handingDaemon) start(t *testing.T) (*daemon.Daemon, *client.Client) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, h.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: h.token,
		Models:   map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: h.model.BaseURL()}},
		A2APeers: []daemon.A2APeer{{URL: h.peer, TokenEnv: "SB_TEST_FOLLOW_TOKEN"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); d.Close(); st.Close() })
	return d, client.New(srv.URL, h.token, nil)
}

// pollTask reads task id with c until done says so.
func pollTask(t *testing.T, c *client.Client, id string, done func(switchboard.Task) bool) switchboard.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		tk, err := c.Task(ctx, id)
		if err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		if done(tk) {
			return tk
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s never reached the awaited state: %+v", id, tk)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// peerArtifact is the text of the artifact task tk got from the peer's
// task remote.
func peerArtifact(tk switchboard.Task, remote string) string {
	for _, a := range tk.Artifacts {
		if strings.HasPrefix(a.ID, "handoff-"+remote+"-") {
			return a.Text
		}
	}
	return ""
}

func handoffStep(tk switchboard.Task) *switchboard.TaskStep {
	for i, s := range tk.Steps {
		if s.Kind == "handoff" && s.Remote != nil {
			return &tk.Steps[i]
		}
	}
	return nil
}

// A delegated task on switchboard A hands work to switchboard B: B's task
// gets A's envelope narrowed to the token B issued (its read-only
// project kept) with what A's task has left of its budget and its
// deadline. A's task answers, then waits for B's: A follows it (also
// after A restarts), and completes with B's artifact as its own. A
// cancel of A's task cancels B's.
func TestHandoffIsFollowedToItsEnd(t *testing.T) {
	ctx := context.Background()
	b := newEnv(t)
	obj := json.RawMessage(`{"type":"object"}`)
	if _, err := b.admin.RegisterTools(ctx, "", []switchboard.Tool{{Name: "finance.write", Description: "Write the finance figures.",
		Surface: switchboard.SurfaceAPI, Class: switchboard.ClassMutate, InputSchema: obj,
		Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: b.srv.URL + "/nowhere"}}}}); err != nil {
		t.Fatal(err)
	}
	tok, err := b.admin.CreateToken(ctx, client.TokenRequest{Agent: "switchboard-a", User: "user:carol", Allow: []string{"finance.*"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SB_TEST_FOLLOW_TOKEN", tok.Token)
	h := handingDaemon{path: filepath.Join(t.TempDir(), "a.db"), peer: b.srv.URL, token: daemon.NewSecret(), model: modeltest.NewOpenAI(t)}
	a, ca := h.start(t)
	handoff := func(id string) modeltest.Turn {
		args, _ := json.Marshal(map[string]any{"to": b.srv.URL, "task": "Summarise Q3 finance", "scope": map[string]any{"allow": []string{"finance.*", "billing.*"}}})
		return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: id, Name: "agents_handoff", Args: string(args)}}}
	}
	deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	envelope := func(access switchboard.ProjectAccess) switchboard.TaskEnvelope {
		return switchboard.TaskEnvelope{Projects: []switchboard.ProjectScope{{Name: "finance", Access: access}}, Allow: []string{"agents.handoff"},
			MaxCalls: 10, MaxTokens: 1_000_000, MaxCost: 2, Deadline: deadline}
	}

	// 1. B's task completes; A follows it and completes with its artifact.
	h.model.Push(handoff("h1"), modeltest.Turn{Text: "Handed to the finance team."})
	b.model.Push(modeltest.Turn{Text: "Q3 revenue was 120."})
	tk, err := ca.CreateTask(ctx, client.TaskRequest{Goal: "Get the Q3 finance summary", Envelope: envelope(switchboard.ProjectRead)})
	if err != nil {
		t.Fatal(err)
	}
	tk = pollTask(t, ca, tk.ID, func(t switchboard.Task) bool { return t.Status.Terminal() })
	st := handoffStep(tk)
	if tk.Status != switchboard.TaskCompleted || st == nil || st.Status != string(switchboard.TaskCompleted) || len(tk.Artifacts) != 2 ||
		peerArtifact(tk, st.Remote.TaskID) != "Q3 revenue was 120." {
		t.Fatalf("A's task %+v: want it completed with B's artifact and a completed handoff step", tk)
	}
	bt, err := b.admin.Task(ctx, st.Remote.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	env := bt.Envelope
	if bt.Status != switchboard.TaskCompleted || len(env.Projects) != 1 || env.Projects[0].Access != switchboard.ProjectRead ||
		env.MaxCalls != 9 || env.MaxTokens <= 0 || env.MaxTokens > 1_000_000 || env.MaxCost != 2 || !env.Deadline.Equal(deadline) {
		t.Fatalf("B's task envelope %+v: want A's read-only project, 9 calls (A spent one on the handoff), its tokens, $2 and its deadline", env)
	}

	// 2. B's task waits for an approval while A restarts; the new A
	// follows it on and completes when B does.
	h.model.Push(handoff("h2"), modeltest.Turn{Text: "Handed over."})
	b.model.Push(modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "w1", Name: "finance_write", Args: `{}`}}}, modeltest.Turn{Text: "Written."})
	tk, err = ca.CreateTask(ctx, client.TaskRequest{Goal: "Write the Q3 figures", Envelope: envelope(switchboard.ProjectWrite)})
	if err != nil {
		t.Fatal(err)
	}
	tk = pollTask(t, ca, tk.ID, func(t switchboard.Task) bool { return len(t.Artifacts) == 1 && handoffStep(t) != nil })
	remote := handoffStep(tk).Remote.TaskID
	bt = pollTask(t, b.admin, remote, func(t switchboard.Task) bool { return t.Status == switchboard.TaskInputRequired })
	if tk.Status != switchboard.TaskWorking {
		t.Fatalf("A's task is %s once its run answered, want working until B's task ends", tk.Status)
	}
	a.Close()
	a, ca = h.start(t)
	if _, err := a.RecoverTasks(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.admin.Decide(ctx, bt.Steps[len(bt.Steps)-1].ApprovalID, client.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	tk = pollTask(t, ca, tk.ID, func(t switchboard.Task) bool { return t.Status.Terminal() })
	if tk.Status != switchboard.TaskCompleted || len(tk.Runs) != 1 || len(tk.Artifacts) != 2 || peerArtifact(tk, remote) != "Written." {
		t.Fatalf("A's task after its restart: %+v, want completed by its one run with B's artifact", tk)
	}

	// 3. Cancelling A's task cancels B's.
	h.model.Push(handoff("h3"), modeltest.Turn{Text: "Handed over."})
	b.model.Push(modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "w2", Name: "finance_write", Args: `{}`}}})
	tk, err = ca.CreateTask(ctx, client.TaskRequest{Goal: "Write the Q4 figures", Envelope: envelope(switchboard.ProjectWrite)})
	if err != nil {
		t.Fatal(err)
	}
	tk = pollTask(t, ca, tk.ID, func(t switchboard.Task) bool { return handoffStep(t) != nil })
	remote = handoffStep(tk).Remote.TaskID
	pollTask(t, b.admin, remote, func(t switchboard.Task) bool { return t.Status == switchboard.TaskInputRequired })
	if _, err := ca.CancelTask(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	if bt, err = b.admin.Task(ctx, remote); err != nil || bt.Status != switchboard.TaskCancelled {
		t.Fatalf("B's task after A's was cancelled: %+v %v, want cancelled", bt.Status, err)
	}
	tk = pollTask(t, ca, tk.ID, func(t switchboard.Task) bool { return handoffStep(t).Status == string(switchboard.TaskCancelled) })
	if tk.Status != switchboard.TaskCancelled {
		t.Fatalf("A's task is %s, want cancelled", tk.Status)
	}
}
