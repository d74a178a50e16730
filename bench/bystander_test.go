package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestReplicaBystanders measures what a replica spends on calls it has
// nothing to do with. Three replicas: A holds tab 1, which answers at once;
// C holds tab 2, whose one call (made through B) stays unanswered, so B
// waits for a call of its own and C keeps a tab of its own — the two ways
// a replica came to listen to every call's messages when they were sent
// by kind of topic. Two loads, each through A: browser calls to tab 1
// (their requests and acknowledgements once reached every replica
// keeping a tab, C here), and api calls with an idempotency key each
// (their ends once reached every replica waiting for any call, B here).
// Reported: each process's CPU a call while a load runs alone.
//
// With SWITCHBOARD_BENCH_BASELINE naming a switchboard binary built from
// an earlier commit, a second set of replicas runs it on a schema of its
// own, and the sets alternate (baseline first) for
// SWITCHBOARD_BENCH_ROUNDS rounds.
//
//	SWITCHBOARD_TEST_POSTGRES=… go test -count=1 ./bench -run 'TestReplicaBystanders$' -v
func TestReplicaBystanders(t *testing.T) {
	if !strings.Contains(testRunFlag(), "TestReplicaBystanders") {
		t.Skip("opt-in benchmark: name it in -run")
	}
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set SWITCHBOARD_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	t.Logf("machine: %d CPUs, %s; %s", numCPU(), cpuModel(), loadAverage())
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"t1","echo":`))
		w.Write(body)
		w.Write([]byte(`}`))
	}))
	defer backend.Close()
	type set struct {
		name  string
		c     *replicaSet
		sides []side
	}
	var sets []set
	add := func(name, bin string) {
		c := startReplicas(t, dsn, 3, bin, "process")
		sets = append(sets, set{name, c, bystanders(t, c, backend.URL)})
	}
	if base := os.Getenv("SWITCHBOARD_BENCH_BASELINE"); base != "" {
		add("before", base)
	}
	add("after", switchboardBinary(t))
	n, rounds := benchSize(2000, 1)
	for r := range rounds {
		for _, s := range sets {
			for _, sd := range s.sides {
				t.Logf("replicas-bystanders: round %d %s, %s: %s", r+1, s.name, sd.name, s.c.cpuPerCall(t, n, 1, sd))
			}
		}
	}
}

// bystanders sets c up (replica 0 "A" holds tab 1; replica 2 "C" holds tab
// 2, which replica 1 "B" waits on) and returns the loads.
func bystanders(t *testing.T, c *replicaSet, backend string) []side {
	ctx, cancel := context.WithCancel(context.Background())
	a, b, cc := c.direct(0), c.direct(1), c.direct(2)
	hold := navBench
	hold.Name = "nav.hold"
	serve := func(cl *client.Client, tool switchboard.Tool, answer bool) string {
		cred, err := cl.CreateSession(ctx, "bench")
		if err != nil {
			t.Fatal(err)
		}
		tab := cl.Tab(cred)
		if _, err := tab.Advertise(ctx, []switchboard.Tool{tool}); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = tab.Serve(ctx, func(hctx context.Context, req switchboard.BrowserActionRequest) (json.RawMessage, error) {
				if !answer {
					<-hctx.Done()
					return nil, hctx.Err()
				}
				return json.RawMessage(`{"page":"media","url":"/demo/media","title":"Media library"}`), nil
			})
		}()
		t.Cleanup(func() { cancel(); <-done })
		return cred.SessionID
	}
	tab1 := serve(a, navBench, true)
	tab2 := serve(cc, hold, false)
	var key atomic.Int64
	call := func(ctx context.Context) error {
		resp, err := a.CallToolWith(ctx, "nav.goto", bridgeInput, client.CallOptions{SessionID: tab1},
			client.CallExtra{IdempotencyKey: "k" + strconv.FormatInt(key.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)})
		if err == nil && resp.Status != switchboard.StatusSucceeded {
			err = fmt.Errorf("status %s", resp.Status)
		}
		return err
	}
	waitFor(t, "a browser action through replica A", func() error { return call(ctx) })
	// B's call to tab 2 waits as long as the benchmark runs (asynchronous:
	// B's broker holds it, and B's API layer awaits it).
	waitFor(t, "B's call reaching tab 2", func() error {
		resp, err := b.CallToolWith(ctx, "nav.hold", bridgeInput, client.CallOptions{SessionID: tab2}, client.CallExtra{Async: true})
		if err == nil && resp.Status != switchboard.StatusDispatched {
			err = fmt.Errorf("status %s", resp.Status)
		}
		return err
	})
	if _, err := a.RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
		InputSchema: brokerInputSchema,
		Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{
			Method: "POST", URL: backend + "/api/projects/{projectId}/tasks",
		}},
	}}); err != nil {
		t.Fatal(err)
	}
	keyed := func(ctx context.Context) error {
		resp, err := a.CallToolWith(ctx, "tasks.create", brokerInput, client.CallOptions{},
			client.CallExtra{IdempotencyKey: "k" + strconv.FormatInt(key.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)})
		if err == nil && resp.Status != switchboard.StatusSucceeded {
			err = fmt.Errorf("status %s", resp.Status)
		}
		return err
	}
	waitFor(t, "a keyed api call through replica A", func() error { return keyed(ctx) })
	return []side{{"browser calls through A to its tab", call}, {"keyed api calls through A", keyed}}
}
