package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// testQuota: usage adds up per subject and day; a call past the call
// limit adds nothing; tokens and cost add whatever the limit; past days
// expire.
func testQuota(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	day, next := "2026-12-04", "2026-12-05"
	limit := switchboard.QuotaUsage{Calls: 2, Tokens: 10}
	for i := range 2 {
		used, ok, err := s.QuotaAdd(ctx, "agent:a", day, switchboard.QuotaUsage{Calls: 1}, limit)
		if err != nil || !ok || used.Calls != int64(i+1) {
			t.Fatalf("call %d: %+v %v %v", i+1, used, ok, err)
		}
	}
	used, ok, err := s.QuotaAdd(ctx, "agent:a", day, switchboard.QuotaUsage{Calls: 1}, limit)
	if err != nil || ok || used.Calls != 2 {
		t.Fatalf("a call past the limit: %+v %v %v; want refused at 2", used, ok, err)
	}
	used, ok, err = s.QuotaAdd(ctx, "agent:a", day, switchboard.QuotaUsage{Tokens: 25, CostMicros: 1500}, limit)
	if err != nil || !ok || used != (switchboard.QuotaUsage{Calls: 2, Tokens: 25, CostMicros: 1500}) {
		t.Fatalf("spend past the token limit is recorded (it was spent): %+v %v %v", used, ok, err)
	}
	if got, err := s.QuotaGet(ctx, "agent:a", day); err != nil || got != used {
		t.Fatalf("get: %+v %v, want %+v", got, err, used)
	}
	for _, other := range []struct{ subject, day string }{{"user:alice", day}, {"agent:a", next}} {
		if got, err := s.QuotaGet(ctx, other.subject, other.day); err != nil || got != (switchboard.QuotaUsage{}) {
			t.Fatalf("%s on %s: %+v %v, want nothing", other.subject, other.day, got, err)
		}
	}
	if _, _, err := s.QuotaAdd(ctx, "agent:a", next, switchboard.QuotaUsage{Calls: 1}, limit); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.QuotaAdd(ctx, "", day, switchboard.QuotaUsage{Calls: 1}, limit); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("no subject: %v", err)
	}
	if _, _, err := s.QuotaAdd(ctx, "user:alice", day, switchboard.QuotaUsage{Calls: 1}, limit); err != nil {
		t.Fatal(err)
	}
	rows, err := s.QuotaList(ctx, day, 10)
	if err != nil || len(rows) != 2 || rows[0].Subject != "agent:a" || rows[0].Used != used ||
		rows[1].Subject != "user:alice" || rows[1].Used.Calls != 1 {
		t.Fatalf("list of %s: %+v %v; want agent:a (most calls) then user:alice", day, rows, err)
	}
	if rows, err := s.QuotaList(ctx, day, 1); err != nil || len(rows) != 1 {
		t.Fatalf("list limited to 1: %+v %v", rows, err)
	}
	if _, err := s.QuotaList(ctx, "", 1); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("list without a day: %v", err)
	}
	if n, err := s.QuotaExpire(ctx, next, 100); err != nil || n != 2 {
		t.Fatalf("expire: %d %v, want the two rows of %s", n, err, day)
	}
	if got, _ := s.QuotaGet(ctx, "agent:a", next); got.Calls != 1 {
		t.Fatalf("expire took today's row: %+v", got)
	}
}

// testQuotaRace: concurrent admissions of one subject never pass the
// limit, and every admission is counted once.
func testQuotaRace(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	const limit, tries = 7, 24
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range tries {
		wg.Go(func() {
			_, ok, err := s.QuotaAdd(ctx, "user:race", "2026-12-04", switchboard.QuotaUsage{Calls: 1}, switchboard.QuotaUsage{Calls: limit})
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	used, err := s.QuotaGet(ctx, "user:race", "2026-12-04")
	if err != nil || admitted != limit || used.Calls != limit {
		t.Fatalf("%d admitted, %+v counted (%v); want %d both", admitted, used, err, limit)
	}
}
