package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/jsondiff"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/workspace"
	"github.com/switchboardhq/switchboard/sqlite"
)

type benchAgents []switchboard.AgentSession

func (a benchAgents) List(context.Context) ([]switchboard.AgentSession, error) { return a, nil }

type benchJobs []switchboard.Job

func (j benchJobs) Running() []switchboard.Job { return j }

// TestDigestCompile measures the workspace digest (docs/workspace.md) over
// a workspace of 20 contexts with 200 panels in 2 tabs, 50 agents, 100
// running jobs and a full activity ring (500 entries in SQLite): p50/p99
// of a cached read, of a recompile after a change batch, and of a first
// compile (a new Workspace, nothing memoized); then the bytes of a
// STATE_DELTA for a typical change (one panel turns dirty) against the
// STATE_SNAPSHOT.
func TestDigestCompile(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := activity.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range activity.DefaultRingSize {
		if err := ledger.Append(ctx, &switchboard.ActivityEntry{Actor: "agent:assistant", Verb: activity.VerbToolCall,
			Target: fmt.Sprintf("tasks.op%d", i%40)}); err != nil {
			t.Fatal(err)
		}
	}
	var agents benchAgents
	for i := range 50 {
		agents = append(agents, switchboard.AgentSession{ID: fmt.Sprintf("ag_%02d", i), Kind: switchboard.AgentBackground,
			Label: fmt.Sprintf("Worker %d", i), Status: switchboard.AgentRunning, Task: "reconcile the invoices of March"})
	}
	var jobs benchJobs
	for i := range 100 {
		jobs = append(jobs, switchboard.Job{ID: fmt.Sprintf("job_%03d", i), Tool: "deck.export", Caller: "agent:assistant",
			Status: switchboard.JobRunning, Progress: float64(i) / 100, CreatedAt: time.Unix(int64(i), 0)})
	}
	opts := workspace.Options{Registry: reg, Ledger: ledger, Agents: agents, Jobs: jobs}
	contexts := func(tab int, dirty bool) []switchboard.WorkspaceContext {
		var cs []switchboard.WorkspaceContext
		atts := []switchboard.Attention{switchboard.AttentionFocused, switchboard.AttentionVisible, switchboard.AttentionBackground}
		for i := range 10 {
			c := switchboard.WorkspaceContext{ID: fmt.Sprintf("route:/projects/p%d-%d", tab, i), Kind: "page",
				Label: fmt.Sprintf("Project %d-%d overview", tab, i), Attention: atts[min(i, 2)]}
			for j := range 10 {
				c.Panels = append(c.Panels, switchboard.WorkspacePanel{ID: fmt.Sprintf("panel-%d-%d-%d", tab, i, j), Type: "form",
					Title: fmt.Sprintf("Settings %d", j), Origin: "host", Dirty: dirty && i == 0 && j == 0})
			}
			cs = append(cs, c)
		}
		return cs
	}
	fill := func(w *workspace.Workspace) {
		for tab := range 2 {
			if _, err := w.Report(ctx, fmt.Sprintf("tab-%d", tab), "", contexts(tab, false)); err != nil {
				t.Fatal(err)
			}
		}
	}
	w, err := workspace.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fill(w)
	reader := switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})
	time1 := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	read := func() {
		if _, err := w.DigestJSON(reader); err != nil {
			t.Fatal(err)
		}
	}
	read()
	var cached, changed, first []time.Duration
	for range 2000 {
		cached = append(cached, time1(read))
	}
	for range 200 {
		w.Touch()
		changed = append(changed, time1(read))
	}
	for range 20 {
		fresh, err := workspace.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		fill(fresh)
		first = append(first, time1(func() {
			if _, err := fresh.DigestJSON(reader); err != nil {
				t.Fatal(err)
			}
		}))
		fresh.Close()
	}
	d, _ := w.Digest(reader)
	t.Logf("digest: %d tokens, %d contexts, %d agents, %d jobs, %d activity; dropped %+v", d.Tokens, len(d.Contexts), len(d.Agents), len(d.Jobs), len(d.RecentActivity), *d.Dropped)
	t.Logf("| read | p50 | p99 |")
	for _, r := range []struct {
		name string
		ds   []time.Duration
	}{{"cached (no change since the last read)", cached}, {"after a change batch (recompile)", changed}, {"first compile (new workspace)", first}} {
		slices.Sort(r.ds)
		p50, p99 := pct(r.ds, 50), pct(r.ds, 99)
		t.Logf("| %s | %v | %v |", r.name, p50, p99)
	}

	// STATE_DELTA vs STATE_SNAPSHOT for a typical change: the user edits a
	// panel, so it turns dirty.
	before, _ := w.DigestJSON(reader)
	if _, err := w.Report(ctx, "tab-0", "", contexts(0, true)); err != nil {
		t.Fatal(err)
	}
	after, _ := w.DigestJSON(reader)
	snap, _ := json.Marshal(map[string]json.RawMessage{"workspace": before})
	next, _ := json.Marshal(map[string]json.RawMessage{"workspace": after})
	ops, err := jsondiff.Diff(snap, next)
	if err != nil {
		t.Fatal(err)
	}
	delta, _ := json.Marshal(ops)
	t.Logf("STATE_SNAPSHOT %d bytes; STATE_DELTA for one panel turning dirty %d bytes (%d ops, %.1f%% of the snapshot)",
		len(snap), len(delta), len(ops), 100*float64(len(delta))/float64(len(snap)))
}
