package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestReplicasKillChurn keeps three replicas busy with calls through the
// balancer while one after another is SIGKILLed and started again. When
// the load stops, every invocation the store holds ends in exactly one
// terminal state with exactly one tool.call ledger entry, and the ledger
// (several replicas appending on chains of their own) verifies on every
// replica.
func TestReplicasKillChurn(t *testing.T) {
	c := newCluster(t, 3)
	be := newBackend(t)
	ctx := context.Background()
	c.register(be.tools(), "test.send")
	lb := c.lb()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var answered atomic.Int64
	for w := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				// Errors are expected: a call whose replica is killed under
				// it loses its connection. What it left in the store is
				// checked below.
				if _, err := lb.CallTool(cctx, "test.send", json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)), client.CallOptions{}); err == nil {
					answered.Add(1)
				}
				cancel()
			}
		})
	}
	for round := range 3 {
		i := round % len(c.reps)
		time.Sleep(time.Second) // calls in flight everywhere
		c.kill(i)
		time.Sleep(500 * time.Millisecond) // the others carry the load
		c.start(i)
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if answered.Load() == 0 {
		t.Fatal("no call was answered")
	}

	db, err := pgx.Connect(ctx, c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	// Survivors resolve the killed replicas' calls within the replica
	// timeout; every invocation then has one terminal status.
	var states map[string]string
	eventually(t, 90*time.Second, "every invocation ends", func() (bool, string) {
		states = map[string]string{}
		rows, err := db.Query(ctx, `SELECT id, status FROM invocations`)
		if err != nil {
			return false, err.Error()
		}
		defer rows.Close()
		open := 0
		for rows.Next() {
			var id, st string
			if err := rows.Scan(&id, &st); err != nil {
				return false, err.Error()
			}
			states[id] = st
			if !switchboard.Status(st).Terminal() {
				open++
			}
		}
		return open == 0, fmt.Sprintf("%d of %d not terminal", open, len(states))
	})
	entries := map[string]int{}
	rows, err := db.Query(ctx, `SELECT details->>'invocationId', count(*) FROM activity WHERE verb = 'tool.call' GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		entries[id] = n
	}
	rows.Close()
	for id, st := range states {
		if entries[id] != 1 {
			t.Errorf("invocation %s (%s) has %d tool.call entries, want 1", id, st, entries[id])
		}
	}
	for id := range entries {
		if _, ok := states[id]; !ok {
			t.Errorf("a tool.call entry names invocation %s, which the store does not hold", id)
		}
	}
	var chains int
	if err := db.QueryRow(ctx, `SELECT count(DISTINCT chain) FROM activity`).Scan(&chains); err != nil {
		t.Fatal(err)
	}
	for i := range c.reps {
		rep, err := c.at(i).VerifyActivity(ctx)
		if err != nil || !rep.OK {
			t.Fatalf("activity verify on replica %d: %+v %v", i, rep, err)
		}
	}
	t.Logf("%d invocations (%d answered), %d ledger chains used", len(states), answered.Load(), chains)
}
