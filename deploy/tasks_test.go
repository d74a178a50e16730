package deploy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// TestTaskAcrossProjectsSurvivesReplicaKill is a delegated task's whole
// story on two `serve` replicas over one Postgres: a task spanning the
// finance (read) and design (write) projects runs through the built-in
// assistant on replica A with a scripted model, reads finance, proposes
// design.write and waits for its owner's approval (input_required). A is
// SIGKILLed there; B takes the task over and resumes it (the finance
// read is not run again), the approval is given on B, design.write
// reaches the backend exactly once, and the task completes with its
// "result" artifact within its call budget. finance.write, a tool of the
// read-only project, is never offered to the model.
func TestTaskAcrossProjectsSurvivesReplicaKill(t *testing.T) {
	if os.Getenv(dsnEnv) == "" || bin == "" {
		t.Skipf("set %s to run replicas on Postgres", dsnEnv)
	}
	ctx := context.Background()
	var (
		mu  sync.Mutex
		hit = map[string]int{}
	)
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		hit[r.Method+" "+r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer be.Close()
	hits := func(k string) int { mu.Lock(); defer mu.Unlock(); return hit[k] }

	write := modeltest.Call{ID: "w1", Name: "design_write", Args: `{"doc":"Q3 board pack"}`}
	llm := modeltest.NewOpenAI(t,
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "r1", Name: "finance_read", Args: `{}`}}},
		modeltest.Turn{ToolCalls: []modeltest.Call{write}},
		// The run resumed on B: the model proposes the same write again,
		// which is the same call (the task's idempotency key), not a second.
		modeltest.Turn{ToolCalls: []modeltest.Call{write}},
		modeltest.Turn{Text: "The board pack is ready."},
	)
	cfg := filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "models:\n  default:\n    provider: openai\n    model: scripted\n    baseURL: %s\n", llm.BaseURL()), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 2, "--config", cfg)
	tool := func(name, method, path string, class switchboard.Class) switchboard.Tool {
		return switchboard.Tool{Name: name, Description: "Use " + name + ".", Class: class, Surface: switchboard.SurfaceAPI,
			InputSchema: []byte(`{"type":"object"}`),
			Binding:     &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: method, URL: be.URL + path}}}
	}
	c.register([]switchboard.Tool{
		tool("finance.read", "GET", "/finance", switchboard.ClassRead),
		tool("finance.write", "POST", "/finance", switchboard.ClassMutate),
		tool("design.write", "POST", "/design", switchboard.ClassMutate),
	}, "design.write")
	a, b := c.at(0), c.at(1)

	tk, err := a.CreateTask(ctx, client.TaskRequest{Goal: "Prepare the Q3 board pack", Envelope: switchboard.TaskEnvelope{
		Projects: []switchboard.ProjectScope{{Name: "finance", Access: switchboard.ProjectRead}, {Name: "design", Access: switchboard.ProjectWrite}},
		MaxCalls: 4}})
	if err != nil {
		t.Fatal(err)
	}
	tk = waitTask(t, b, tk.ID, func(t switchboard.Task) bool { return t.Status == switchboard.TaskInputRequired })
	if len(tk.Steps) != 2 || tk.Steps[0].Tool != "finance.read" || tk.Steps[1].Kind != "approval" || tk.Steps[1].Tool != "design.write" {
		t.Fatalf("before the kill: steps %+v, want the finance read and design.write awaiting approval", tk.Steps)
	}
	if len(tk.Runs) != 1 || hits("GET /finance") != 1 || hits("POST /design") != 0 {
		t.Fatalf("before the kill: runs %v, backend %v", tk.Runs, hit)
	}
	c.kill(0) // SIGKILL the replica working on it: no shutdown path runs

	// B takes A over after the heartbeat timeout (the call awaiting
	// approval becomes its own) and resumes the task in a run of its own,
	// whose proposal of the same write joins the pending call.
	tk = waitTask(t, b, tk.ID, func(t switchboard.Task) bool { return len(t.Runs) == 2 && len(llm.Requests()) == 3 })
	if _, err := b.Decide(ctx, tk.Steps[1].ApprovalID, client.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	tk = waitTask(t, b, tk.ID, func(t switchboard.Task) bool { return t.Status == switchboard.TaskCompleted })

	if n := hits("POST /design"); n != 1 {
		t.Fatalf("design.write reached the backend %d times, want once", n)
	}
	if last := tk.Steps[len(tk.Steps)-1]; last.Kind != "call" || last.Tool != "design.write" || last.InvocationID != tk.Steps[1].InvocationID ||
		last.Status != string(switchboard.StatusSucceeded) {
		t.Fatalf("the last step %+v, want the approved design.write (%s) succeeded", last, tk.Steps[1].InvocationID)
	}
	if n := hits("GET /finance"); n != 1 {
		t.Fatalf("finance.read ran %d times, want once (the resumed run is told its result)", n)
	}
	if n := hits("POST /finance"); n != 0 {
		t.Fatalf("finance.write ran %d times, want never", n)
	}
	if tk.Usage.Calls > tk.Envelope.MaxCalls {
		t.Fatalf("usage %+v beyond the budget of %d calls", tk.Usage, tk.Envelope.MaxCalls)
	}
	if len(tk.Artifacts) != 1 || tk.Artifacts[0].Name != "result" || tk.Artifacts[0].Text != "The board pack is ready." {
		t.Fatalf("artifacts %+v, want the result", tk.Artifacts)
	}
	first, err := b.GetRun(ctx, tk.Runs[0])
	if err != nil || first.Status == switchboard.RunSucceeded {
		t.Fatalf("the killed run: %+v %v, want it ended without success", first, err)
	}
	reqs := llm.Requests()
	if len(reqs) != 4 {
		t.Fatalf("the model was asked %d times, want 4", len(reqs))
	}
	for i, r := range reqs {
		var offered []string
		tools, _ := r["tools"].([]any)
		for _, tl := range tools {
			f, _ := tl.(map[string]any)["function"].(map[string]any)
			name, _ := f["name"].(string)
			offered = append(offered, name)
		}
		if o := strings.Join(offered, ","); strings.Contains(o, "finance_write") || !strings.Contains(o, "finance_read") || !strings.Contains(o, "design_write") {
			t.Fatalf("model request %d offered %s: want finance_read and design_write, never finance_write", i, o)
		}
	}
	// The resumed run was told the finance read it must not repeat.
	msgs, _ := reqs[2]["messages"].([]any)
	var told string
	for _, x := range msgs {
		if m, _ := x.(map[string]any); m["role"] == "user" {
			told, _ = m["content"].(string)
		}
	}
	if !strings.Contains(told, "finance.read (invocation ") {
		t.Fatalf("the resumed run's message: %q, want the completed finance read", told)
	}
}

// waitTask polls the task on c until done holds, failing if it ends
// first.
func waitTask(t *testing.T, c *client.Client, id string, done func(switchboard.Task) bool) switchboard.Task {
	t.Helper()
	var tk switchboard.Task
	eventually(t, 60*time.Second, "task "+id, func() (bool, string) {
		var err error
		tk, err = c.Task(context.Background(), id)
		if err != nil {
			return false, err.Error()
		}
		if tk.Status.Terminal() && !done(tk) {
			t.Fatalf("task %s ended %s (%+v) before the awaited state; steps %+v", id, tk.Status, tk.Error, tk.Steps)
		}
		return done(tk), fmt.Sprintf("%s runs %v steps %+v", tk.Status, tk.Runs, tk.Steps)
	})
	return tk
}
