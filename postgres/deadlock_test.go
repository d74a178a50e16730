package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/postgres"
)

// TestBatchesFinishingOneInvocationDoNotDeadlock: two replicas (stores on
// one schema, group commit on) finish the same invocations at once, each
// in its own random order, so their batches hold overlapping invocation
// rows. Each invocation ends once (one winner, the other CONFLICT) and no
// write fails with a deadlock (SQLSTATE 40P01), which Postgres would
// otherwise break only after deadlock_timeout (1 s by default).
func TestBatchesFinishingOneInvocationDoNotDeadlock(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	ctx := context.Background()
	stores := make([]*postgres.Store, 2)
	for i := range stores {
		s, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxConns: 4})
		must(t, err)
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	const rounds, calls = 40, 24
	var (
		mu        sync.Mutex
		deadlocks int
		other     []error
	)
	start := time.Now()
	for round := range rounds {
		ids := make([]string, calls)
		for i := range ids {
			ids[i] = fmt.Sprintf("inv-%d-%d", round, i)
			must(t, stores[0].InvocationCreate(ctx, switchboard.Invocation{ID: ids[i], Tool: "t", Status: switchboard.StatusDispatched}))
		}
		wins := make([]int, calls)
		var wg sync.WaitGroup
		for r, s := range stores {
			order := rand.Perm(calls)
			for _, i := range order {
				wg.Go(func() {
					inv := switchboard.Invocation{ID: ids[i], Status: switchboard.StatusSucceeded, Result: []byte(`{}`)}
					e := &switchboard.ActivityEntry{Actor: fmt.Sprintf("replica-%d", r), Verb: "invocation.finish", Target: ids[i]}
					_, err := s.InvocationFinish(ctx, inv, e, switchboard.StatusDispatched)
					mu.Lock()
					defer mu.Unlock()
					var pe *pgconn.PgError
					switch {
					case err == nil:
						wins[i]++
					case errors.As(err, &pe) && pe.Code == "40P01":
						deadlocks++
					case switchboard.CodeOf(err) != switchboard.CodeConflict:
						other = append(other, err)
					}
				})
			}
		}
		wg.Wait()
		for i, n := range wins {
			if n > 1 {
				t.Fatalf("%s was finished %d times", ids[i], n)
			}
		}
	}
	t.Logf("%d rounds of %d invocations finished by both replicas: %d deadlocks, %d other errors, in %s",
		rounds, calls, deadlocks, len(other), time.Since(start).Round(time.Millisecond))
	if deadlocks > 0 {
		t.Errorf("%d finishes failed with a deadlock", deadlocks)
	}
	for _, err := range other {
		t.Errorf("a finish: %v", err)
	}
}
