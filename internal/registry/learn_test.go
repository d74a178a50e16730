package registry_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/registry"
)

// clock is an injected registry clock that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// callEntry is the ledger entry the broker writes for a call.
func callEntry(actor, tool, inv string, status switchboard.Status, at time.Time) switchboard.ActivityEntry {
	d, _ := json.Marshal(map[string]any{"invocationId": inv, "status": status, "runId": "run-" + inv})
	return switchboard.ActivityEntry{ID: 1, Ts: at, Actor: actor, Verb: activity.VerbToolCall, Target: tool, Details: d}
}

func agentCtx(id string) context.Context {
	return switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: id})
}

func learnFixture(t *testing.T, opts *registry.Options) (*registry.Registry, switchboard.Store, *clock) {
	t.Helper()
	st := openStore(t)
	c := &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	if opts == nil {
		opts = &registry.Options{}
	}
	opts.Now = c.now
	r := newRegistry(t, st, opts)
	if _, err := r.Register(context.Background(), switchboard.SourceHost, []switchboard.Tool{
		tool("deck.export", "Export a deck as a PDF file.", switchboard.ClassRead),
		tool("image.resize", "Resize an image.", switchboard.ClassMutate),
		tool("users.list", "List the users of the workspace.", switchboard.ClassRead),
	}); err != nil {
		t.Fatal(err)
	}
	return r, st, c
}

func first(t *testing.T, r *registry.Registry, ctx context.Context, q string) string {
	t.Helper()
	res, err := r.Search(ctx, switchboard.SearchQuery{Query: q, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) == 0 {
		return ""
	}
	return res.Items[0].Name
}

func TestLearnFromUse(t *testing.T) {
	t.Parallel()
	r, st, c := learnFixture(t, nil)
	ctx := agentCtx("a1")
	const q = "make the images match the brand colours for bob@example.com"
	if got := first(t, r, ctx, "brand colours"); got != "" {
		t.Fatalf("before learning, brand colours finds %s", got)
	}
	if _, err := r.SearchMeta(ctx, switchboard.SearchQuery{Query: q}, nil); err != nil {
		t.Fatal(err)
	}
	c.add(30 * time.Second)
	r.Observe(callEntry("agent:a1", "image.resize", "i1", switchboard.StatusSucceeded, c.now()))
	r.WaitLearned()

	if got := first(t, r, ctx, "brand colours"); got != "image.resize" {
		t.Fatalf("after learning, brand colours finds %q, want image.resize", got)
	}
	l, err := r.Learned(context.Background(), "image.resize")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Queries) != 1 || l.Queries[0].Query != "make the images match the brand colours for" || l.Queries[0].Callers != 1 || !l.Enabled {
		t.Fatalf("Learned = %+v (the e-mail address must be gone)", l)
	}

	// The same caller and query again counts once.
	if _, err := r.SearchMeta(ctx, switchboard.SearchQuery{Query: q}, nil); err != nil {
		t.Fatal(err)
	}
	r.Observe(callEntry("agent:a1", "image.resize", "i2", switchboard.StatusSucceeded, c.now()))
	r.WaitLearned()
	if l, _ := r.Learned(context.Background(), "image.resize"); len(l.Queries) != 1 || l.Queries[0].Callers != 1 {
		t.Fatalf("a repeat counted twice: %+v", l)
	}

	// Rebuilt on start: a new registry over the same store finds it.
	r2 := newRegistry(t, st, &registry.Options{Now: c.now})
	if got := first(t, r2, ctx, "brand colours"); got != "image.resize" {
		t.Fatalf("after a restart, brand colours finds %q", got)
	}

	// A new description keeps what was learned.
	if _, err := r.Register(context.Background(), switchboard.SourceHost, []switchboard.Tool{
		tool("image.resize", "Scale a picture to new dimensions.", switchboard.ClassMutate)}); err != nil {
		t.Fatal(err)
	}
	if got := first(t, r, ctx, "brand colours"); got != "image.resize" {
		t.Fatalf("after a description change, brand colours finds %q", got)
	}

	// --forget
	n, err := r.Forget(context.Background(), "image.resize")
	if err != nil || n != 1 {
		t.Fatalf("Forget = %d, %v", n, err)
	}
	if got := first(t, r, ctx, "brand colours"); got != "" {
		t.Fatalf("after forget, brand colours finds %q", got)
	}
	if _, err := r.Learned(context.Background(), "nope"); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Fatalf("Learned(unknown) = %v", err)
	}
}

func TestLearnAttribution(t *testing.T) {
	t.Parallel()
	r, st, c := learnFixture(t, nil)
	search := func(ctx context.Context, q string) {
		t.Helper()
		if _, err := r.SearchMeta(ctx, switchboard.SearchQuery{Query: q}, nil); err != nil {
			t.Fatal(err)
		}
	}
	learned := func(tool string) []switchboard.LearnedQuery {
		t.Helper()
		r.WaitLearned()
		qs, err := st.SearchExampleList(context.Background(), tool)
		if err != nil {
			t.Fatal(err)
		}
		return qs
	}

	// A regex search teaches nothing: its pattern is not a request in words.
	if _, err := r.SearchMeta(agentCtx("a9"), switchboard.SearchQuery{Query: `(?i)users roster`, Regex: true}, nil); err != nil {
		t.Fatal(err)
	}
	r.Observe(callEntry("agent:a9", "users.list", "i0", switchboard.StatusSucceeded, c.now()))
	if got := learned("users.list"); len(got) != 0 {
		t.Fatalf("learned from a regex search: %+v", got)
	}

	// Past the window: nothing.
	search(agentCtx("a1"), "team roster")
	c.add(registry.LearnWindow + time.Second)
	r.Observe(callEntry("agent:a1", "users.list", "i1", switchboard.StatusSucceeded, c.now()))
	if got := learned("users.list"); len(got) != 0 {
		t.Fatalf("learned past the window: %+v", got)
	}

	// Another caller's search: nothing.
	search(agentCtx("a2"), "team roster")
	r.Observe(callEntry("agent:a1", "users.list", "i2", switchboard.StatusSucceeded, c.now()))
	// Failed and denied calls: nothing.
	search(agentCtx("a1"), "team roster")
	for _, st := range []switchboard.Status{switchboard.StatusFailed, switchboard.StatusDenied, switchboard.StatusCancelled} {
		r.Observe(callEntry("agent:a1", "users.list", "i3", st, c.now()))
	}
	if got := learned("users.list"); len(got) != 0 {
		t.Fatalf("learned from another caller or a failed call: %+v", got)
	}

	// A query holding a secret is never stored, and it ends the
	// attribution of the caller's earlier search.
	search(agentCtx("a3"), "list the team")
	search(agentCtx("a3"), "list users with token sk-ant-abcdefghijklmnopqrstuvwxyz")
	r.Observe(callEntry("agent:a3", "users.list", "i4", switchboard.StatusSucceeded, c.now()))
	if got := learned("users.list"); len(got) != 0 {
		t.Fatalf("learned after a search with a secret: %+v", got)
	}

	// The latest search in the window wins; a reversal takes it back.
	search(agentCtx("a1"), "team roster")
	r.Observe(callEntry("agent:a1", "users.list", "i5", switchboard.StatusSucceeded, c.now()))
	if got := learned("users.list"); len(got) != 1 || got[0].Query != "team roster" {
		t.Fatalf("learned %+v, want team roster", got)
	}
	undo := callEntry("agent:a1", "users.list", "i6", switchboard.StatusSucceeded, c.now())
	undo.Reversal = json.RawMessage(`{"of": 7, "invocationId": "i5", "tool": "users.list"}`)
	r.Observe(undo)
	if got := learned("users.list"); len(got) != 0 {
		t.Fatalf("a reversed call's example survived: %+v", got)
	}
	if got := first(t, r, agentCtx("a1"), "roster"); got != "" {
		t.Fatalf("a reversed call's example still ranks: %s", got)
	}

	// An MCP session's search teaches only calls of the same run.
	search(registry.WithSearchRun(agentCtx("a4"), "run-other"), "team roster")
	r.Observe(callEntry("agent:a4", "users.list", "i7", switchboard.StatusSucceeded, c.now()))
	if got := learned("users.list"); len(got) != 0 {
		t.Fatalf("learned across MCP sessions: %+v", got)
	}

	// A deleted tool's examples go with it.
	search(agentCtx("a1"), "team roster")
	r.Observe(callEntry("agent:a1", "users.list", "i8", switchboard.StatusSucceeded, c.now()))
	if got := learned("users.list"); len(got) != 1 {
		t.Fatalf("want one example before the delete: %+v", got)
	}
	if err := r.Unregister(context.Background(), "", "users.list"); err != nil {
		t.Fatal(err)
	}
	if got := learned("users.list"); len(got) != 0 {
		t.Fatalf("a deleted tool kept its examples: %+v", got)
	}
}

// TestLearnPoisoningBounded: one caller teaching a tool many unrelated
// phrasings stores at most LearnPerCallerTool of them, each at the weight
// of one caller, so the honest tool still wins its own words.
func TestLearnPoisoningBounded(t *testing.T) {
	t.Parallel()
	r, st, c := learnFixture(t, nil)
	ctx := agentCtx("spammer")
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "export"}
	for _, w := range words {
		if _, err := r.SearchMeta(ctx, switchboard.SearchQuery{Query: w + " pdf"}, nil); err != nil {
			t.Fatal(err)
		}
		c.add(time.Second)
		r.Observe(callEntry("agent:spammer", "users.list", "i-"+w, switchboard.StatusSucceeded, c.now()))
		r.WaitLearned()
	}
	qs, err := st.SearchExampleList(context.Background(), "users.list")
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != registry.LearnPerCallerTool {
		t.Fatalf("one caller stored %d phrasings, want the cap %d", len(qs), registry.LearnPerCallerTool)
	}
	if got := first(t, r, ctx, "export pdf"); got != "deck.export" {
		t.Fatalf("export pdf finds %q after spam, want deck.export", got)
	}
	// One search teaches at most a few tools.
	if _, err := r.SearchMeta(agentCtx("greedy"), switchboard.SearchQuery{Query: "everything at once"}, nil); err != nil {
		t.Fatal(err)
	}
	for i, tool := range []string{"deck.export", "image.resize", "users.list"} {
		r.Observe(callEntry("agent:greedy", tool, "g"+string(rune('0'+i)), switchboard.StatusSucceeded, c.now()))
	}
	r.WaitLearned()
	all, _ := st.SearchExampleList(context.Background(), "")
	n := 0
	for _, q := range all {
		if q.Query == "everything at once" {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("a multi-part search taught %d tools, want 3", n)
	}
}

func TestLearnOff(t *testing.T) {
	t.Parallel()
	r, st, c := learnFixture(t, &registry.Options{NoLearning: true})
	if _, err := r.SearchMeta(agentCtx("a1"), switchboard.SearchQuery{Query: "team roster"}, nil); err != nil {
		t.Fatal(err)
	}
	r.Observe(callEntry("agent:a1", "users.list", "i1", switchboard.StatusSucceeded, c.now()))
	r.WaitLearned()
	if qs, _ := st.SearchExampleList(context.Background(), ""); len(qs) != 0 {
		t.Fatalf("learning off stored %+v", qs)
	}
	if l, err := r.Learned(context.Background(), "users.list"); err != nil || l.Enabled {
		t.Fatalf("Learned with learning off = %+v, %v", l, err)
	}
}

// One agent name acting for two users is two callers: alice's planner's
// search is not attributed to bob's planner's call, and is to its own.
func TestLearnAttributionPerUser(t *testing.T) {
	t.Parallel()
	r, st, c := learnFixture(t, nil)
	planner := func(user string) context.Context {
		return switchboard.WithPrincipal(context.Background(), switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", User: user})
	}
	entry := func(user, inv string) switchboard.ActivityEntry {
		e := callEntry("agent:planner", "users.list", inv, switchboard.StatusSucceeded, c.now())
		d, _ := json.Marshal(map[string]any{"invocationId": inv, "status": switchboard.StatusSucceeded, "runId": "run-" + inv, "user": user})
		e.Details = d
		return e
	}
	learned := func() []switchboard.LearnedQuery {
		t.Helper()
		r.WaitLearned()
		qs, err := st.SearchExampleList(context.Background(), "users.list")
		if err != nil {
			t.Fatal(err)
		}
		return qs
	}
	if _, err := r.SearchMeta(planner("user:alice"), switchboard.SearchQuery{Query: "team roster"}, nil); err != nil {
		t.Fatal(err)
	}
	r.Observe(entry("user:bob", "i1"))
	if got := learned(); len(got) != 0 {
		t.Fatalf("alice's planner's search taught bob's planner's call: %+v", got)
	}
	r.Observe(entry("user:alice", "i2"))
	if got := learned(); len(got) != 1 || got[0].Query != "team roster" {
		t.Fatalf("learned %+v, want alice's planner's team roster", got)
	}
}

// TestLearnAttributesSentences: two tools called after one multi-part
// request each learn their own sentence, the first tool's example being
// rewritten when the second call comes; when the second call is reversed,
// the first tool learns the whole request again.
func TestLearnAttributesSentences(t *testing.T) {
	t.Parallel()
	r, st, c := learnFixture(t, nil)
	ctx := agentCtx("a1")
	learned := func(tool string) []string {
		t.Helper()
		r.WaitLearned()
		qs, err := st.SearchExampleList(context.Background(), tool)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range qs {
			out = append(out, q.Query)
		}
		return out
	}
	if _, err := r.SearchMeta(ctx, switchboard.SearchQuery{Query: "Export the deck as a PDF. Then resize the image to fit."}, nil); err != nil {
		t.Fatal(err)
	}
	r.Observe(callEntry("agent:a1", "deck.export", "i1", switchboard.StatusSucceeded, c.now()))
	if got := learned("deck.export"); len(got) != 1 || got[0] != "export the deck as a pdf then resize the image to fit" {
		t.Fatalf("deck.export alone learned %q, want the whole request", got)
	}
	r.Observe(callEntry("agent:a1", "image.resize", "i2", switchboard.StatusSucceeded, c.now()))
	if got := learned("deck.export"); len(got) != 1 || got[0] != "export the deck as a pdf" {
		t.Fatalf("deck.export learned %q, want its own sentence only", got)
	}
	if got := learned("image.resize"); len(got) != 1 || got[0] != "then resize the image to fit" {
		t.Fatalf("image.resize learned %q, want its own sentence only", got)
	}
	undo := callEntry("agent:a1", "image.resize", "i3", switchboard.StatusSucceeded, c.now())
	undo.Reversal = json.RawMessage(`{"of": 2, "invocationId": "i2", "tool": "image.resize"}`)
	r.Observe(undo)
	if got := learned("image.resize"); len(got) != 0 {
		t.Fatalf("a reversed call's example survived: %q", got)
	}
	if got := learned("deck.export"); len(got) != 1 || got[0] != "export the deck as a pdf then resize the image to fit" {
		t.Fatalf("after the reversal deck.export learned %q, want the whole request again", got)
	}
}
