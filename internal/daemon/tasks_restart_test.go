package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// A working task survives a SIGKILL of its daemon: it hits an approval,
// its mutation runs, the daemon is killed while the assistant is in its
// next model call, and the next start over the same store ends the dead
// run, resumes the task from its completed steps — the model asking for
// the same mutation again gets its stored outcome, the backend is written
// once — and the task completes within its budget with its artifact.
func TestTaskSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ctx := context.Background()
	var (
		mu     sync.Mutex
		writes []string
		reads  int
	)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.Method == http.MethodPost {
			writes = append(writes, string(body))
		} else {
			reads++
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer backend.Close()
	written := func() int { mu.Lock(); defer mu.Unlock(); return len(writes) }

	m := modeltest.NewOpenAI(t)
	hold := make(chan struct{}) // never closed: the kill ends that request
	write := modeltest.Call{ID: "w1", Name: "design_write", Args: `{"doc":"Q3 board pack"}`}
	m.Push(
		modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "r1", Name: "finance_read", Args: `{}`}}},
		modeltest.Turn{ToolCalls: []modeltest.Call{write}},
		modeltest.Turn{Text: "Summarising", Hold: hold},
		// The resumed run: the model asks for the same write again.
		modeltest.Turn{ToolCalls: []modeltest.Call{write}},
		modeltest.Turn{Text: "The board pack is ready."},
	)
	dir := t.TempDir()
	addr, child := startChild(t, dir, "SWITCHBOARD_TEST_RESTART_MODEL="+m.BaseURL())
	admin := client.New(addr, restartToken, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	if _, err := admin.RegisterTools(ctx, "", []switchboard.Tool{
		{Name: "finance.read", Description: "Read the finance figures.", Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead, InputSchema: obj,
			Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "GET", URL: backend.URL + "/finance"}}},
		{Name: "design.write", Description: "Write a design document.", Surface: switchboard.SurfaceAPI, Class: switchboard.ClassMutate, InputSchema: obj,
			Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: backend.URL + "/design"}}},
	}); err != nil {
		t.Fatal(err)
	}
	tk, err := admin.CreateTask(ctx, client.TaskRequest{Goal: "Prepare the Q3 board pack", Projects: []string{"finance", "design"},
		Envelope: switchboard.TaskEnvelope{MaxCalls: 5}})
	if err != nil {
		t.Fatal(err)
	}
	tk = waitTask(t, admin, tk.ID, status(switchboard.TaskInputRequired))
	if _, err := admin.Decide(ctx, tk.Steps[len(tk.Steps)-1].ApprovalID, client.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	// The write ran and is a completed step; the assistant is in its next
	// model call.
	tk = waitTask(t, admin, tk.ID, func(t switchboard.Task) bool {
		return len(t.Steps) == 3 && t.Steps[2].Tool == "design.write" && len(m.Requests()) == 3
	})
	firstWrite := tk.Steps[2].InvocationID
	if err := child.Process.Kill(); err != nil { // SIGKILL: no shutdown path runs
		t.Fatal(err)
	}
	_ = child.Wait()

	addr, _ = startChild(t, dir, "SWITCHBOARD_TEST_RESTART_MODEL="+m.BaseURL())
	admin = client.New(addr, restartToken, nil)
	tk = waitTask(t, admin, tk.ID, status(switchboard.TaskCompleted))
	if written() != 1 {
		t.Fatalf("design.write reached the backend %d times, want once", written())
	}
	if len(tk.Runs) != 2 || tk.Usage.Calls > tk.Envelope.MaxCalls {
		t.Fatalf("runs %v usage %+v, want two runs within %d calls", tk.Runs, tk.Usage, tk.Envelope.MaxCalls)
	}
	first, err := admin.GetRun(ctx, tk.Runs[0])
	if err != nil || first.Status != switchboard.RunFailed || first.Error == nil || first.Error.Code != switchboard.CodeOutcomeUnknown {
		t.Fatalf("the killed run: %+v %v, want failed OUTCOME_UNKNOWN", first, err)
	}
	last := tk.Steps[len(tk.Steps)-1]
	if last.Tool != "design.write" || last.InvocationID != firstWrite || last.Status != string(switchboard.StatusSucceeded) {
		t.Fatalf("the resumed run's write: %+v, want the first write's outcome (%s) replayed", last, firstWrite)
	}
	if len(tk.Artifacts) != 1 || tk.Artifacts[0].Text != "The board pack is ready." {
		t.Fatalf("artifacts %+v", tk.Artifacts)
	}
	// The resumed run was told what was already done.
	msgs, _ := m.Requests()[3]["messages"].([]any)
	var told string
	for _, x := range msgs {
		if mm, _ := x.(map[string]any); mm["role"] == "user" {
			told, _ = mm["content"].(string)
		}
	}
	if !strings.Contains(told, "Do not repeat them") || !strings.Contains(told, "design.write (invocation "+firstWrite+")") {
		t.Fatalf("the resumed run's message: %q", told)
	}
}

// A replica that dies with a task working (it stops beating; nothing
// records a clean stop) has its task resumed by the survivor that takes
// its work over, on SQLite and Postgres: one resume, and the task
// completes there with its artifact.
func TestTaskResumedBySurvivor(t *testing.T) {
	for _, d := range durables(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			var reads atomic.Int64
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reads.Add(1)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"revenue":120}`))
			}))
			defer backend.Close()
			m := modeltest.NewOpenAI(t)
			hold := make(chan struct{})
			defer close(hold)
			m.Push(
				modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "r1", Name: "finance_read", Args: `{}`}}},
				modeltest.Turn{Text: "Summarising", Hold: hold},
				modeltest.Turn{Text: "Revenue was 120."},
			)
			var shared bus.Bus = bus.NewLocal()
			start := func(name string) (*daemon.Daemon, *client.Client) {
				st := d.open(t)
				b := shared
				if d.bus != nil {
					b = d.bus(t)
				}
				dm, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: "tok", Bus: b,
					Models:   map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: m.BaseURL()}},
					Replicas: daemon.ReplicaOptions{Name: name, Heartbeat: 20 * time.Millisecond, Timeout: 2 * time.Second}})
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(dm.Handler())
				t.Cleanup(func() {
					srv.Close()
					dm.Close()
					if c, ok := b.(interface{ Close() error }); ok && d.bus != nil {
						c.Close()
					}
					st.Close()
				})
				return dm, client.New(srv.URL, "tok", nil)
			}
			a, ca := start("a")
			_, cb := start("b")
			if _, err := ca.RegisterTools(ctx, "", []switchboard.Tool{{Name: "finance.read", Description: "Read the finance figures.",
				Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead, InputSchema: json.RawMessage(`{"type":"object"}`),
				Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "GET", URL: backend.URL + "/finance"}}}}); err != nil {
				t.Fatal(err)
			}
			tk, err := ca.CreateTask(ctx, client.TaskRequest{Goal: "What was Q3 revenue?"})
			if err != nil {
				t.Fatal(err)
			}
			waitTask(t, cb, tk.ID, func(t switchboard.Task) bool { return len(t.Steps) == 1 && len(m.Requests()) == 2 })
			a.Close() // dies: its heartbeat stops, no clean stop is recorded
			tk = waitTask(t, cb, tk.ID, status(switchboard.TaskCompleted))
			if len(tk.Runs) != 2 || reads.Load() != 1 || len(tk.Artifacts) != 1 || tk.Artifacts[0].Text != "Revenue was 120." {
				t.Fatalf("after the takeover: runs %v, reads %d, artifacts %+v", tk.Runs, reads.Load(), tk.Artifacts)
			}
		})
	}
}
