// Package storetest is the conformance suite every switchboard.Store driver
// passes (Exercise), and a fault-injecting Store wrapper (Faulty) that
// packages above the drivers use to simulate busy or failing storage.
//
// The suite checks the behaviour promised by the Store doc comments against
// a real database: batch atomicity, catalog revisions and versions, list
// order, compare-and-swap under contention, the activity hash chain under
// concurrent appends, filters and paging, JSON and time round trips, chat
// history, and the governance records (tokens, approvals, jobs, idempotency
// keys). Every method of switchboard.Store is exercised; the sqlite and
// postgres driver tests each call Exercise.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/switchboardhq/switchboard"
)

// Exercise runs the conformance suite. open must return a fresh, empty
// store for each call and arrange (with t.Cleanup) to close it and drop
// whatever it created; subtests run in parallel, each with its own store.
func Exercise(t *testing.T, open func(t *testing.T) switchboard.Store) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open(t))
		})
	}
}

var cases = []struct {
	name string
	fn   func(*testing.T, switchboard.Store)
}{
	{"ToolPutList", testToolPutList},
	{"Task", testTask},
	{"ToolUpsert", testToolUpsert},
	{"ToolBatchAtomic", testToolBatchAtomic},
	{"ToolPutRejects", testToolPutRejects},
	{"ToolPutKeepsCallerSlice", testToolPutKeepsCallerSlice},
	{"ToolDelete", testToolDelete},
	{"ToolOrder", testToolOrder},
	{"ToolRoundTrip", testToolRoundTrip},
	{"InvocationCreateGet", testInvocationCreateGet},
	{"InvocationCAS", testInvocationCAS},
	{"InvocationCASRace", testInvocationCASRace},
	{"InvocationFailInFlight", testInvocationFailInFlight},
	{"InvocationFinish", testInvocationFinish},
	{"InvocationCreateFinished", testInvocationCreateFinished},
	{"InvocationList", testInvocationList},
	{"Session", testSession},
	{"Setting", testSetting},
	{"PanelRegistration", testPanelRegistration},
	{"SearchExample", testSearchExample},
	{"SearchExampleBounds", testSearchExampleBounds},
	{"Quota", testQuota},
	{"QuotaRace", testQuotaRace},
	{"SessionTab", testSessionTab},
	{"SessionList", testSessionList},
	{"ActivityChain", testActivityChain},
	{"ActivityConcurrentAppend", testActivityConcurrentAppend},
	{"CallPathConcurrent", testCallPathConcurrent},
	{"ActivityFilters", testActivityFilters},
	{"ActivityDefaultLimit", testActivityDefaultLimit},
	{"ActivityJSONRoundTrip", testActivityJSONRoundTrip},
	{"ActivityTimePrecision", testActivityTimePrecision},
	{"ActivityRejects", testActivityRejects},
	{"ActivityHead", testActivityHead},
	{"Chat", testChat},
	{"PanelInstances", testPanelInstances},
	{"Tokens", testTokens},
	{"SigningKeys", testSigningKeys},
	{"OAuthRecords", testOAuthRecords},
	{"ApprovalLifecycle", testApprovalLifecycle},
	{"ApprovalDecideRace", testApprovalDecideRace},
	{"Jobs", testJobs},
	{"JobList", testJobList},
	{"IdempotencyClaim", testIdempotencyClaim},
	{"IdempotencyClaimRace", testIdempotencyClaimRace},
	{"Replicas", testReplicas},
	{"ReplicaClaimRace", testReplicaClaimRace},
	{"ReplicaOwnership", testReplicaOwnership},
	{"Agents", testAgents},
	{"AgentAdopt", testAgentAdopt},
	{"AgentEndRace", testAgentEndRace},
	{"InvocationExpire", testInvocationExpire},
	{"IdempotencyExpire", testIdempotencyExpire},
	{"Runs", testRuns},
	{"RunOneRunningPerChat", testRunOneRunningPerChat},
	{"RunFailInFlight", testRunFailInFlight},
	{"RunExpire", testRunExpire},
	{"Cancelled", testCancelled},
	{"Closed", testClosed},
}

// base has sub-microsecond digits on purpose: stores keep microseconds.
var base = time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)

// micro is t as a store returns it.
func micro(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Truncate(time.Microsecond).UTC()
}

// cmpOpts compare domain values: *Error's cause is not stored.
var cmpOpts = []cmp.Option{cmpopts.IgnoreUnexported(switchboard.Error{})}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantCode fails unless err carries code.
func wantCode(t *testing.T, err error, code switchboard.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if got := switchboard.CodeOf(err); got != code {
		t.Fatalf("got %s (%v), want %s", got, err, code)
	}
	var e *switchboard.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v is not a *switchboard.Error", err)
	}
}

func revision(t *testing.T, s switchboard.Store) int64 {
	t.Helper()
	rev, err := s.CatalogRevision(context.Background())
	must(t, err)
	return rev
}

// verifyChain recomputes every hash of a contiguous run of entries that
// starts at the genesis entry.
func verifyChain(entries []switchboard.ActivityEntry) error {
	type head struct {
		seq  int64
		hash string
	}
	heads, lastID := map[int]head{}, int64(0)
	for i := range entries {
		e := &entries[i]
		if e.ID <= lastID {
			return fmt.Errorf("entry %d: id not increasing after %d", e.ID, lastID)
		}
		c, seq := e.Position()
		h := heads[c]
		if seq != h.seq+1 {
			return fmt.Errorf("entry %d: position %d of chain %d follows %d (gap)", e.ID, seq, c, h.seq)
		}
		if e.PrevHash != h.hash {
			return fmt.Errorf("entry %d: prevHash %q, want %q (fork or gap)", e.ID, e.PrevHash, h.hash)
		}
		if x := e.ComputeHash(e.PrevHash); e.Hash != x {
			return fmt.Errorf("entry %d: hash %s, recomputed %s", e.ID, e.Hash, x)
		}
		heads[c], lastID = head{seq, e.Hash}, e.ID
	}
	return nil
}

// prevOnChain is the hash of the entry before e on e's chain, among
// entries (oldest first).
func prevOnChain(entries []switchboard.ActivityEntry, e switchboard.ActivityEntry) string {
	c, seq := e.Position()
	for _, x := range entries {
		if xc, xs := x.Position(); xc == c && xs == seq-1 {
			return x.Hash
		}
	}
	return ""
}
