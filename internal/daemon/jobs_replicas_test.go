package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// TestJobCancelledOnAnotherReplicaStopsItsWork: a job runs on replica A;
// its cancel lands on replica B, which asks A: A's work sees the cancel at
// once (before, B only recorded the cancel and A's work ran on to its
// end), the job ends cancelled once, and the ledger names the canceller.
func TestJobCancelledOnAnotherReplicaStopsItsWork(t *testing.T) {
	t.Parallel()
	ds, urls := pgReplicasWith(t, 2, daemon.Options{})
	ctx := context.Background()
	started := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	for _, d := range ds {
		if err := d.RegisterFunc(ctx, switchboard.Tool{Name: "exports.build", Description: "Build an export.", Class: switchboard.ClassJob, InputSchema: objectSchema},
			func(ctx context.Context, _ json.RawMessage) (any, error) {
				started <- struct{}{}
				select {
				case <-ctx.Done():
					stopped <- context.Cause(ctx)
					return nil, context.Cause(ctx)
				case <-time.After(2 * time.Minute):
					stopped <- nil
					return map[string]string{"file": "export.csv"}, nil
				}
			}); err != nil {
			t.Fatal(err)
		}
	}
	do := func(base, method, path string, body any, out any) int {
		t.Helper()
		var rd *bytes.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		} else {
			rd = bytes.NewReader(nil)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Authorization", "Bearer replica-token")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if out != nil {
			_ = json.NewDecoder(resp.Body).Decode(out)
		}
		return resp.StatusCode
	}
	var call switchboard.CallResponse
	if code := do(urls[0], "POST", "/api/v1/tools/exports.build/call", map[string]any{"input": map[string]any{}}, &call); code != http.StatusOK {
		t.Fatalf("job call on A: %d %+v", code, call)
	}
	var res struct {
		JobID string `json:"jobId"`
	}
	if err := json.Unmarshal(call.Result, &res); err != nil || res.JobID == "" {
		t.Fatalf("job call answered %s", call.Result)
	}
	<-started

	var j switchboard.Job
	if code := do(urls[1], "POST", "/api/v1/jobs/"+res.JobID+"/cancel", nil, &j); code != http.StatusOK || j.Status != switchboard.JobCancelled {
		t.Fatalf("cancel through B: %d %+v", code, j)
	}
	select {
	case err := <-stopped:
		if err == nil || switchboard.CodeOf(err) != switchboard.CodeCancelled {
			t.Fatalf("A's work ended with %v, want the cancel", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("A's work did not see the cancel made through B")
	}
	var again switchboard.ErrorEnvelope
	if code := do(urls[1], "POST", "/api/v1/jobs/"+res.JobID+"/cancel", nil, &again); code != http.StatusConflict {
		t.Fatalf("a second cancel: %d %+v, want 409", code, again.Error)
	}
	var entries struct {
		Items []switchboard.ActivityEntry `json:"items"`
	}
	if code := do(urls[1], "GET", "/api/v1/activity?verb=job.finish&limit=100", nil, &entries); code != http.StatusOK {
		t.Fatalf("activity: %d", code)
	}
	n := 0
	for _, e := range entries.Items {
		if bytes.Contains(e.Details, []byte(res.JobID)) {
			n++
			if e.Actor != "user:admin" || !bytes.Contains(e.Details, []byte(`"cancelled"`)) {
				t.Errorf("the job's end entry: actor %s details %s", e.Actor, e.Details)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d job.finish entries for the job, want 1", n)
	}
}
