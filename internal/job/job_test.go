package job_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/job"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

type env struct {
	store *sqlite.Store
	jobs  *job.Service
	b     *broker.Broker
}

func newEnv(t *testing.T, fn broker.Func) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := activity.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := job.New(job.Options{Store: st, Ledger: ledger})
	if err != nil {
		t.Fatal(err)
	}
	b := broker.New(broker.Options{Store: st, Registry: reg, Jobs: jobs, OnActivity: ledger.Observe})
	t.Cleanup(b.Close)
	tool := switchboard.Tool{Name: "deck.export", Description: "Export a deck as PDF.", Class: switchboard.ClassJob,
		Binding: &switchboard.Binding{Go: true}, OutputSchema: json.RawMessage(`{"type":"object","required":["url"]}`)}
	if _, err := reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
		t.Fatal(err)
	}
	b.Handle(tool.Name, fn)
	return &env{store: st, jobs: jobs, b: b}
}

func (e *env) start(t *testing.T, ctx context.Context) switchboard.Job {
	t.Helper()
	inv, err := e.b.Call(ctx, broker.CallRequest{Tool: "deck.export", Caller: &operator})
	if err != nil || inv.Status != switchboard.StatusSucceeded {
		t.Fatalf("start: %+v %v", inv, err)
	}
	var h struct {
		JobID  string `json:"jobId"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(inv.Result, &h); err != nil || h.JobID == "" || h.Status != "running" {
		t.Fatalf("the call did not return a job handle: %s", inv.Result)
	}
	j, err := e.jobs.Get(context.Background(), h.JobID)
	if err != nil || j.InvocationID != inv.ID {
		t.Fatalf("job %+v %v", j, err)
	}
	return j
}

func (e *env) finishes(t *testing.T) []switchboard.ActivityEntry {
	t.Helper()
	es, err := e.store.ActivityList(context.Background(), switchboard.ActivityFilter{Verb: activity.VerbJobFinish})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// A job returns its id at once, reports progress to its record and to the
// caller, and ends with its (validated) result.
func TestJobRunsInBackground(t *testing.T) {
	step, release := make(chan struct{}), make(chan struct{})
	e := newEnv(t, func(ctx context.Context, _ json.RawMessage) (any, error) {
		switchboard.ReportProgress(ctx, switchboard.Progress{Progress: 1, Total: 4, Message: "rendering slides"})
		step <- struct{}{}
		<-release
		return map[string]string{"url": "https://x/deck.pdf"}, nil
	})
	var (
		mu   sync.Mutex
		seen []switchboard.Progress
	)
	ctx := switchboard.WithProgress(context.Background(), func(p switchboard.Progress) {
		mu.Lock()
		seen = append(seen, p)
		mu.Unlock()
	})
	j := e.start(t, ctx)
	<-step
	got, _ := e.jobs.Get(context.Background(), j.ID)
	if got.Status != switchboard.JobRunning || got.Progress != 0.25 || got.Message != "rendering slides" {
		t.Fatalf("mid-way: %+v", got)
	}
	close(release)
	done, err := e.jobs.Wait(context.Background(), j.ID)
	if err != nil || done.Status != switchboard.JobSucceeded || string(done.Result) != `{"url":"https://x/deck.pdf"}` || done.Progress != 1 {
		t.Fatalf("finished: %+v %v", done, err)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0].Message != "rendering slides" {
		t.Errorf("the caller heard %+v", seen)
	}
	mu.Unlock()
	if es := e.finishes(t); len(es) != 1 || es[0].Target != "deck.export" {
		t.Fatalf("job.finish entries %+v", es)
	}
}

// A job cancelled mid-way ends cancelled, its work's context ends, and one
// ledger entry names who cancelled it.
func TestJobCancelledMidway(t *testing.T) {
	halfway, stopped := make(chan struct{}), make(chan error, 1)
	e := newEnv(t, func(ctx context.Context, _ json.RawMessage) (any, error) {
		switchboard.ReportProgress(ctx, switchboard.Progress{Progress: 0.5, Message: "half way"})
		close(halfway)
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	j := e.start(t, context.Background())
	<-halfway
	user := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})
	got, err := e.jobs.Cancel(user, j.ID)
	if err != nil || got.Status != switchboard.JobCancelled || got.Error == nil || got.Error.Code != switchboard.CodeCancelled {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	if cause := <-stopped; switchboard.CodeOf(cause) != switchboard.CodeCancelled {
		t.Fatalf("the work stopped with %v", cause)
	}
	done, _ := e.jobs.Wait(context.Background(), j.ID)
	if done.Status != switchboard.JobCancelled {
		t.Fatalf("after the work returned: %+v", done)
	}
	if _, err := e.jobs.Cancel(user, j.ID); switchboard.CodeOf(err) != switchboard.CodeConflict {
		t.Fatalf("second cancel: %v", err)
	}
	es := e.finishes(t)
	if len(es) != 1 || es[0].Actor != "user:admin" {
		t.Fatalf("job.finish entries %+v", es)
	}
}

// A failing job is failed with its code; a bad result fails validation.
func TestJobFailure(t *testing.T) {
	e := newEnv(t, func(context.Context, json.RawMessage) (any, error) {
		return map[string]string{"nourl": "x"}, nil
	})
	j := e.start(t, context.Background())
	done, _ := e.jobs.Wait(context.Background(), j.ID)
	if done.Status != switchboard.JobFailed || done.Error == nil || done.Error.Code != switchboard.CodeSchemaViolation {
		t.Fatalf("job with a bad result: %+v", done)
	}
}

// A job lost by a restart is failed at start, OUTCOME_UNKNOWN, with its
// job.finish entry; a live replica's running job is left alone.
func TestRecover(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	for id, replica := range map[string]string{"job_lost": "rep_dead", "job_live": "rep_live"} {
		if err := e.store.JobCreate(ctx, switchboard.Job{ID: id, Tool: "deck.export", Status: switchboard.JobRunning, CreatedAt: time.Now(), Replica: replica}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := e.jobs.Recover(ctx, "rep_dead"); err != nil || n != 1 {
		t.Fatalf("recover: %d %v", n, err)
	}
	j, _ := e.jobs.Get(ctx, "job_lost")
	if j.Status != switchboard.JobFailed || j.Error == nil || j.Error.Code != switchboard.CodeOutcomeUnknown || j.FinishedAt.IsZero() {
		t.Fatalf("lost job: %+v", j)
	}
	if j, _ := e.jobs.Get(ctx, "job_live"); j.Status != switchboard.JobRunning {
		t.Fatalf("a live replica's job: %+v", j)
	}
	es := e.finishes(t)
	if len(es) != 1 || !strings.Contains(string(es[0].Details), `"jobId":"job_lost"`) || !strings.Contains(string(es[0].Details), `"code":"OUTCOME_UNKNOWN"`) {
		t.Fatalf("job.finish entries %+v", es)
	}
}

// operator is the caller of the tests' calls: the workspace's administrator.
var operator = switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}
