package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/search"
	"github.com/switchboardhq/switchboard/sqlite"
)

// These tests reach into the learner to hold its write slots or a
// search's write lock: that is how a busy daemon interleaves writes, and
// holding them makes the interleaving certain instead of timed.

// pausingStore is a real store whose next SearchExampleList of a tool,
// once armed, returns its rows only after release is closed (read has
// been closed by then): a reload that read the store and has not yet set
// the index.
type pausingStore struct {
	switchboard.Store
	armed   atomic.Pointer[string]
	read    chan struct{}
	release chan struct{}
}

func (s *pausingStore) arm(tool string) {
	s.read, s.release = make(chan struct{}), make(chan struct{})
	s.armed.Store(&tool)
}

func (s *pausingStore) SearchExampleList(ctx context.Context, tool string) ([]switchboard.LearnedQuery, error) {
	qs, err := s.Store.SearchExampleList(ctx, tool)
	if p := s.armed.Load(); p != nil && *p == tool && s.armed.CompareAndSwap(p, nil) {
		close(s.read)
		<-s.release
	}
	return qs, err
}

func internalFixture(t *testing.T) (*Registry, *pausingStore, time.Time) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ps := &pausingStore{Store: st}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r, err := New(context.Background(), ps, &Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string","description":"Task title"}}}`)
	if _, err := r.Register(context.Background(), switchboard.SourceHost, []switchboard.Tool{
		{Name: "deck.export", Description: "Export a deck as a PDF file.", Class: switchboard.ClassRead, InputSchema: schema},
		{Name: "image.resize", Description: "Resize an image.", Class: switchboard.ClassMutate, InputSchema: schema},
	}); err != nil {
		t.Fatal(err)
	}
	return r, ps, now
}

func agentSearch(t *testing.T, r *Registry, agent, q string) {
	t.Helper()
	ctx := switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: agent})
	if _, err := r.SearchMeta(ctx, switchboard.SearchQuery{Query: q}, nil); err != nil {
		t.Fatal(err)
	}
}

func call(agent, tool, inv string, at time.Time) switchboard.ActivityEntry {
	d, _ := json.Marshal(map[string]any{"invocationId": inv, "status": switchboard.StatusSucceeded})
	return switchboard.ActivityEntry{Ts: at, Actor: "agent:" + agent, Verb: activity.VerbToolCall, Target: tool, Details: d}
}

func undo(agent, tool, inv string, at time.Time) switchboard.ActivityEntry {
	e := call(agent, tool, inv+"-undo", at)
	e.Reversal, _ = json.Marshal(map[string]any{"invocationId": inv, "tool": tool})
	return e
}

// stored is what the store holds for tool.
func stored(t *testing.T, r *Registry, tool string) []string {
	t.Helper()
	r.WaitLearned()
	qs, err := r.store.SearchExampleList(context.Background(), tool)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, q := range qs {
		out = append(out, q.Query)
	}
	return out
}

// indexed is what the index holds for tool.
func indexed(r *Registry, tool string) []string {
	r.WaitLearned()
	var out []string
	for _, l := range r.index.LearnedOf(tool) {
		out = append(out, l.Query)
	}
	slices.Sort(out)
	return out
}

// busy takes every write slot, as learnWriters writes in flight do, and
// returns what gives them back.
func busy(r *Registry) (free func()) {
	for range learnWriters {
		r.learn.sem <- struct{}{}
	}
	return func() {
		for range learnWriters {
			<-r.learn.sem
		}
	}
}

const twoPart = "Export the deck as a PDF. Then resize the image to fit."

// TestLearnRewriteWhileBusy: when a second call after a search arrives
// while every write slot is busy, the first tool's example must still be
// narrowed to its own sentence; dropping the rewrite would leave it
// holding the other tool's words for good.
func TestLearnRewriteWhileBusy(t *testing.T) {
	t.Parallel()
	r, _, now := internalFixture(t)
	agentSearch(t, r, "a1", twoPart)
	r.Observe(call("a1", "deck.export", "i1", now))
	if got := stored(t, r, "deck.export"); len(got) != 1 || got[0] != "export the deck as a pdf then resize the image to fit" {
		t.Fatalf("deck.export alone learned %q", got)
	}
	free := busy(r)
	r.Observe(call("a1", "image.resize", "i2", now))
	free()
	if got := stored(t, r, "deck.export"); len(got) != 1 || got[0] != "export the deck as a pdf" {
		t.Fatalf("deck.export learned %q after a rewrite arrived while busy, want its own sentence", got)
	}
	if got := stored(t, r, "image.resize"); len(got) != 1 || got[0] != "then resize the image to fit" {
		t.Fatalf("image.resize learned %q after arriving while busy", got)
	}
}

// TestLearnReversalWhileBusy: a reversal arriving while every write slot
// is busy must still take back the undone call's example.
func TestLearnReversalWhileBusy(t *testing.T) {
	t.Parallel()
	r, _, now := internalFixture(t)
	agentSearch(t, r, "a1", "export the deck")
	r.Observe(call("a1", "deck.export", "i1", now))
	if got := stored(t, r, "deck.export"); len(got) != 1 {
		t.Fatalf("deck.export learned %q", got)
	}
	free := busy(r)
	r.Observe(undo("a1", "deck.export", "i1", now))
	free()
	if got := stored(t, r, "deck.export"); len(got) != 0 {
		t.Fatalf("a call reversed while writes were busy kept its example: %q", got)
	}
	if got := indexed(r, "deck.export"); len(got) != 0 {
		t.Fatalf("a call reversed while writes were busy is still indexed: %q", got)
	}
}

// TestLearnReversalOfForgottenSearch: a call is reversed after its search
// left the caller's remembered searches but while the call's own write
// is still waiting; that write must not store the reversed call's
// example after the reversal deleted it.
func TestLearnReversalOfForgottenSearch(t *testing.T) {
	t.Parallel()
	r, _, now := internalFixture(t)
	agentSearch(t, r, "a1", "export the deck")
	key := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "a1"}.Key()
	r.learn.mu.Lock()
	tt := r.learn.recent[key][0].taught
	r.learn.mu.Unlock()
	tt.mu.Lock() // the search's write waits, as behind a slow earlier one
	r.Observe(call("a1", "deck.export", "i1", now))
	for range learnRecent {
		agentSearch(t, r, "a1", "list the users")
	}
	r.Observe(undo("a1", "deck.export", "i1", now))
	// A reversal that found the search marked the call and waits for the
	// search's lock; one that did not is done once only the held write
	// keeps a slot.
	r.learn.mu.Lock()
	marked := tt.calls[0].reversed
	r.learn.mu.Unlock()
	for !marked && len(r.learn.sem) > 1 {
		runtime.Gosched()
	}
	tt.mu.Unlock()
	if got := stored(t, r, "deck.export"); len(got) != 0 {
		t.Fatalf("a reversed call's example came back: %q", got)
	}
}

// TestLearnReloadOrder: a reload that read the store before a reversal
// deleted an example must not set the index after the reversal's own
// reload did: the reversed call's example would be searched again until
// the next full refresh.
func TestLearnReloadOrder(t *testing.T) {
	t.Parallel()
	r, ps, now := internalFixture(t)
	agentSearch(t, r, "a1", "export the deck")
	r.Observe(call("a1", "deck.export", "i1", now))
	if got := indexed(r, "deck.export"); len(got) != 1 {
		t.Fatalf("deck.export indexed %q", got)
	}
	// a2's example is written and its reload reads the store, a1's
	// example still there, then pauses.
	ps.arm("deck.export")
	agentSearch(t, r, "a2", "make a pdf of the slides")
	r.Observe(call("a2", "deck.export", "i2", now))
	<-ps.read
	// a1's call is reversed; that reload does not wait for a2's.
	r.Observe(undo("a1", "deck.export", "i1", now))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			qs, _ := ps.Store.SearchExampleList(context.Background(), "deck.export")
			if len(qs) == 1 {
				return // the reversal's delete is in the store
			}
			runtime.Gosched()
		}
	}()
	<-done
	close(ps.release)
	if got := indexed(r, "deck.export"); !slices.Equal(got, []string{"make a pdf of the slides"}) {
		t.Fatalf("deck.export indexed %q after a reversal, want only a2's example", got)
	}
}

// TestLearnConcurrentCallsAndReversal: calls after one search observed at
// once, and a reversal observed while their writes are under way, end
// as if they had come one at a time (run with -race).
func TestLearnConcurrentCallsAndReversal(t *testing.T) {
	t.Parallel()
	r, _, now := internalFixture(t)
	for round := range 20 {
		agent := "a" + string(rune('a'+round))
		agentSearch(t, r, agent, twoPart)
		done := make(chan struct{})
		for _, c := range []struct{ tool, inv string }{{"deck.export", agent + "1"}, {"image.resize", agent + "2"}, {"deck.export", agent + "3"}} {
			go func() {
				defer func() { done <- struct{}{} }()
				r.Observe(call(agent, c.tool, c.inv, now))
			}()
		}
		for range 3 {
			<-done
		}
		r.Observe(undo(agent, "image.resize", agent+"2", now))
	}
	if got := stored(t, r, "image.resize"); len(got) != 0 {
		t.Fatalf("reversed calls' examples survived: %q", got)
	}
	want := []string{"export the deck as a pdf then resize the image to fit"}
	if got := stored(t, r, "deck.export"); !slices.Equal(got, want) {
		t.Fatalf("deck.export learned %q, want %q", got, want)
	}
	if got := indexed(r, "deck.export"); !slices.Equal(got, want) {
		t.Fatalf("deck.export indexed %q, want %q", got, want)
	}
}

// TestLearnRememberedSearchSize: a remembered search holds about its
// query's bytes, not a string header per sentence: a query of many tiny
// sentences must not make each of the learnCallers × learnRecent
// remembered searches ten times its size.
//
// Not parallel: it measures the heap.
func TestLearnRememberedSearchSize(t *testing.T) {
	r, _, _ := internalFixture(t)
	q := strings.Repeat("ab. ", search.MaxQueryBytes/4)
	const n = 200
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for i := range n {
		agentSearch(t, r, fmt.Sprint("m", i), q)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	per := (int64(m1.HeapAlloc) - int64(m0.HeapAlloc)) / n
	r.learn.mu.Lock()
	remembered := len(r.learn.recent)
	r.learn.mu.Unlock()
	if remembered < n {
		t.Fatalf("%d searches remembered, want %d", remembered, n)
	}
	if per > 2*search.MaxQueryBytes {
		t.Fatalf("a remembered search of a %d-byte query holds about %d bytes", len(q), per)
	}
}

// TestLearnForgottenStaysForgotten: what a tool learned is forgotten
// (by the operator, or with the tool's deletion); a later call after the
// same search rewrites that search's attribution and must not store the
// forgotten example again.
func TestLearnForgottenStaysForgotten(t *testing.T) {
	t.Parallel()
	r, _, now := internalFixture(t)
	ctx := context.Background()
	agentSearch(t, r, "a1", twoPart)
	r.Observe(call("a1", "deck.export", "i1", now))
	if got := stored(t, r, "deck.export"); len(got) != 1 {
		t.Fatalf("deck.export learned %q", got)
	}
	if n, err := r.Forget(ctx, "deck.export"); err != nil || n != 1 {
		t.Fatalf("Forget = %d, %v", n, err)
	}
	r.Observe(call("a1", "image.resize", "i2", now))
	if got := stored(t, r, "deck.export"); len(got) != 0 {
		t.Fatalf("a forgotten example came back with a later call: %q", got)
	}
	if got := indexed(r, "deck.export"); len(got) != 0 {
		t.Fatalf("a forgotten example is indexed again: %q", got)
	}

	// A deleted tool: its examples go, and a later call of the same
	// search must not bring them back for its next declaration.
	agentSearch(t, r, "a2", twoPart)
	r.Observe(call("a2", "image.resize", "j1", now))
	if got := stored(t, r, "image.resize"); len(got) != 2 {
		t.Fatalf("image.resize learned %q", got)
	}
	if err := r.Unregister(ctx, "", "image.resize"); err != nil {
		t.Fatal(err)
	}
	r.Observe(call("a2", "deck.export", "j2", now))
	if got := stored(t, r, "image.resize"); len(got) != 0 {
		t.Fatalf("a deleted tool's example came back with a later call: %q", got)
	}
}

// TestLearnConcurrentEverything: searches, calls, reversals, forgets and
// a tool's deletion and return, all at once, neither race (-race) nor
// deadlock, and no reversed call keeps an example.
func TestLearnConcurrentEverything(t *testing.T) {
	t.Parallel()
	r, _, now := internalFixture(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 40 {
				agent := fmt.Sprint("g", g, "-", i%3)
				agentSearch(t, r, agent, twoPart)
				inv := fmt.Sprint(agent, "-", i)
				r.Observe(call(agent, "deck.export", inv+"a", now))
				r.Observe(call(agent, "image.resize", inv+"b", now))
				r.Observe(undo(agent, "image.resize", inv+"b", now))
			}
		})
	}
	wg.Go(func() {
		for range 10 {
			if _, err := r.Forget(ctx, "deck.export"); err != nil {
				t.Error(err)
			}
			if err := r.Unregister(ctx, "", "image.resize"); err != nil {
				t.Error(err)
			}
			if _, err := r.Register(ctx, switchboard.SourceHost, []switchboard.Tool{{Name: "image.resize", Description: "Resize an image.", Class: switchboard.ClassMutate,
				InputSchema: json.RawMessage(`{"type":"object"}`)}}); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	if got := stored(t, r, "image.resize"); len(got) != 0 {
		t.Fatalf("reversed calls' examples survived: %q", got)
	}
	if got := indexed(r, "image.resize"); len(got) != 0 {
		t.Fatalf("reversed calls' examples indexed: %q", got)
	}
}
