package agent_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// notices records the flush notices a runtime sends, by replica.
type notices struct {
	mu  sync.Mutex
	got map[string]int // replica -> notices
}

func (n *notices) count(replica string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.got[replica]
}

// TestFlushNoticesGoToReplicasThatAsked: runtime A runs a run over the
// store it shares with runtime B, whose follower asks A for the run's
// flush notices. With B's store poll an hour apart, the notices alone
// bring B's follower to the run's end; A sends them to B only. An interest
// that reaches A after the run's last flush is answered at once and not
// kept, so a second one is answered again.
func TestFlushNoticesGoToReplicasThatAsked(t *testing.T) {
	sent := &notices{got: map[string]int{}}
	var rtB *agent.Runtime // set before anything can ask A for notices
	var st *sqlite.Store
	e := newEnvWith(t, func(s *sqlite.Store, _ *broker.Options) { st = s }, func(o *agent.Options) {
		o.Runs, o.Replica = st, "rep_a"
		o.RunFlushed = func(replica, id string, seq int) {
			sent.mu.Lock()
			sent.got[replica]++
			sent.mu.Unlock()
			if replica == "rep_b" {
				rtB.Notified(id, seq)
			}
		}
	})
	a := e.rt
	rtB, err := agent.New(agent.Options{Broker: e.broker, Registry: e.reg, History: e.store, Runs: e.store, Replica: "rep_b",
		RunPollInterval: time.Hour,
		RunInterest: func(owner, id string) {
			if owner == "rep_a" {
				a.Interested(id, "rep_b")
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rtB.Close)

	hold := make(chan struct{})
	e.model.Push(modeltest.Turn{Text: "Hello from replica A, in small chunks.", ChunkSize: 4, Hold: hold})
	run, err := a.Start(context.Background(), agent.StartRequest{ThreadID: "chat-notices", Input: "say hello"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := rtB.Follow(ctx, run.ID(), 0)
	// await waits for B's follower to satisfy cond; the bound only turns
	// a lost notice into a failure.
	await := func(what string, cond func(recs []agent.Record, complete bool) bool) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			recs, more, complete := f.Events(0)
			if cond(recs, complete) {
				return
			}
			select {
			case <-more:
			case <-deadline:
				t.Fatalf("B's follower never %s: no flush notice woke it", what)
			}
		}
	}
	await("read the first text", func(recs []agent.Record, _ bool) bool {
		for _, r := range recs {
			if _, ok := r.Event.(*agui.TextMessageContent); ok {
				return true
			}
		}
		return false
	})
	close(hold)
	await("read the run's end", func(_ []agent.Record, complete bool) bool { return complete })
	recs, _, _ := f.Events(0)
	if _, ok := recs[len(recs)-1].Event.(*agui.RunFinished); !ok {
		t.Fatalf("B's follower ends with %T", recs[len(recs)-1].Event)
	}
	sent.mu.Lock()
	got := maps.Clone(sent.got)
	sent.mu.Unlock()
	if len(got) != 1 || got["rep_b"] == 0 {
		t.Fatalf("A's notices by replica: %v; want B only", got)
	}

	// The run has ended and its end is stored: an interest is answered at
	// once (asynchronously) and forgotten.
	for i := 1; i <= 2; i++ {
		a.Interested(run.ID(), "rep_c")
		deadline := time.Now().Add(30 * time.Second)
		for sent.count("rep_c") < i {
			if time.Now().After(deadline) {
				t.Fatalf("interest %d in an ended run: %d notices to rep_c", i, sent.count("rep_c"))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
