package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/benchkit"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

const learnAdmin = "bench-learn-admin"

// learnDaemon serves set's catalog from a real daemon (SQLite in memory)
// whose tools all succeed, and returns an admin client and an agent
// client, and the maps between the set's names and the registered ones.
// Schemas lose their "required" lists so that a call with {} passes
// validation; required lists are not indexed. Names and empty
// descriptions are adapted as TestSearchThroughStores does.
func learnDaemon(t *testing.T, set *benchkit.RetrievalSet, learn bool) (admin *client.Client, agents []*client.Client, d *daemon.Daemon, fwd, back map[string]string) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// No rate limit: the feed calls faster than an agent's default 20/s.
	d, err = daemon.New(ctx, daemon.Options{Store: st, AdminToken: learnAdmin, NoSearchLearning: !learn,
		Governance: daemon.GovernanceOptions{RateLimit: &broker.RateLimit{}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); d.Close() })
	tools, fwd, back := learnTools(set)
	for _, tl := range tools {
		d.Broker.Handle(tl.Name, func(context.Context, json.RawMessage) (any, error) { return map[string]any{}, nil })
	}
	admin = client.New(srv.URL, learnAdmin, nil)
	if _, err := admin.RegisterTools(ctx, switchboard.SourceHost, tools); err != nil {
		t.Fatal(err)
	}
	for i := range learnFeeders {
		tok, err := admin.CreateToken(ctx, client.TokenRequest{Agent: fmt.Sprintf("bench-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, client.New(srv.URL, tok.Token, nil))
	}
	return admin, agents, d, fwd, back
}

// learnFeeders is how many agent tokens feed the training queries, in
// turn. One token alone would meet its own bound (registry.LearnPerCaller
// examples) before half of Seal-Tools is fed (its training half makes about
// 1,700 examples), and the bench would measure that bound rather than what
// a catalog learns from half a set's usage. Each query is still fed by one
// caller, so every example keeps one caller's weight.
const learnFeeders = 4

// learnTools adapts set's catalog for registration, with the maps between
// the set's names and the registered ones: see learnDaemon.
func learnTools(set *benchkit.RetrievalSet) (tools []switchboard.Tool, fwd, back map[string]string) {
	tools = make([]switchboard.Tool, len(set.Tools))
	fwd, back = map[string]string{}, map[string]string{}
	for i, tl := range set.Tools {
		orig := tl.Name
		if strings.TrimSpace(tl.Description) == "" {
			tl.Description = set.Source[tl.Name]
		}
		if !strings.Contains(tl.Name, ".") {
			tl.Name = set.Name + "." + tl.Name
		}
		if len(tl.Name) > registry.MaxNameLen {
			tl.Name = fmt.Sprintf("%s_%d", tl.Name[:registry.MaxNameLen-8], i)
		}
		fwd[orig], back[tl.Name] = tl.Name, orig
		var schema map[string]any
		if json.Unmarshal(tl.InputSchema, &schema) == nil {
			delete(schema, "required")
			tl.InputSchema, _ = json.Marshal(schema)
		}
		tl.Class, tl.Surface, tl.Binding = switchboard.ClassRead, switchboard.SurfaceAPI, &switchboard.Binding{Go: true}
		tools[i] = tl
	}
	return tools, fwd, back
}

// split halves a set's queries by a hash of their id: a fixed, arbitrary
// split, so the evaluation half is never seen while choosing anything.
func split(qs []benchkit.RetrievalQuery) (train, eval []benchkit.RetrievalQuery) {
	for _, q := range qs {
		h := fnv.New32a()
		h.Write([]byte(q.QID))
		if h.Sum32()%2 == 0 {
			train = append(train, q)
		} else {
			eval = append(eval, q)
		}
	}
	return train, eval
}

func apiSearcher(c *client.Client, back map[string]string) benchkit.Searcher {
	return func(query string, k int) ([]string, error) {
		res, err := c.SearchTools(context.Background(), switchboard.SearchQuery{Query: query, Limit: min(k, 100)})
		if err != nil {
			return nil, err
		}
		names := make([]string, len(res.Items))
		for i, h := range res.Items {
			names[i] = back[h.Name]
		}
		return names, nil
	}
}

// TestLearnedSearch feeds training queries as usage through the API (the
// agent searches, then calls each gold tool) and scores the evaluation
// half against a daemon that saw the same traffic with learning off; the
// evaluation queries are also split by whether a gold tool of theirs was
// called in training ("seen") or not ("unseen").
func TestLearnedSearch(t *testing.T) {
	// Thousands of calls through the API take minutes (tens under load):
	// a measurement, asked for by name, not a check every test run makes.
	if !strings.Contains(fmt.Sprint(testRunFlag()), "LearnedSearch") {
		t.Skip("run with -run TestLearnedSearch")
	}
	ctx := context.Background()
	for _, set := range loadSets(t) {
		train, eval := split(set.Queries)
		adminOn, agentOn, on, fwd, back := learnDaemon(t, set, true)
		adminOff, agentOff, _, _, _ := learnDaemon(t, set, false)
		var b strings.Builder
		fmt.Fprintf(&b, "\n%s: %d tools; %d training, %d evaluation queries\n| share of the set used | learned R@5 | baseline R@5 | change ± paired SE | learned MRR | baseline MRR | seen R@5 (n) | unseen R@5 learned / baseline (n) | unseen change ± paired SE |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
			set.Name, len(set.Tools), len(train), len(eval))
		fed, seen, se := 0, map[string]bool{}, 0.0
		for _, share := range []float64{0, 0.10, 0.25, 0.50} {
			upto := min(len(train), int(share*float64(len(set.Queries))+0.5))
			for ; fed < upto; fed++ {
				q := train[fed]
				for _, c := range []*client.Client{agentOn[fed%learnFeeders], agentOff[fed%learnFeeders]} {
					if _, err := c.SearchTools(ctx, switchboard.SearchQuery{Query: q.Query}); err != nil {
						t.Fatal(err)
					}
					for _, g := range q.Gold {
						if _, err := c.CallTool(ctx, fwd[g], nil, client.CallOptions{}); err != nil {
							t.Fatalf("call %s: %v", g, err)
						}
					}
				}
				for _, g := range q.Gold {
					seen[g] = true
				}
			}
			on.Registry.WaitLearned()
			stored := 0
			for _, tl := range set.Tools {
				l, err := on.Registry.Learned(ctx, fwd[tl.Name])
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range l.Queries {
					stored += q.Callers
				}
			}
			t.Logf("%s at %d queries fed: %d examples stored", set.Name, fed, stored)
			var seenQ, unseenQ []benchkit.RetrievalQuery
			for _, q := range eval {
				if slices.ContainsFunc(q.Gold, func(g string) bool { return seen[g] }) {
					seenQ = append(seenQ, q)
				} else {
					unseenQ = append(unseenQ, q)
				}
			}
			// Ranking is deterministic, so the order of the two
			// evaluations does not matter; both see the same traffic.
			score := func(qs []benchkit.RetrievalQuery) (onS, offS benchkit.RetrievalScores) {
				var err error
				if onS, err = benchkit.EvaluateRetrieval(qs, apiSearcher(adminOn, back)); err != nil {
					t.Fatal(err)
				}
				if offS, err = benchkit.EvaluateRetrieval(qs, apiSearcher(adminOff, back)); err != nil {
					t.Fatal(err)
				}
				return onS, offS
			}
			allOn, allOff := score(eval)
			seenOn, seenOff := score(seenQ)
			unOn, unOff := score(unseenQ)
			// Paired standard errors of the changes: both daemons answer
			// the same queries, so per-query differences are what vary.
			delta := func(qs []benchkit.RetrievalQuery) (float64, float64) {
				return pairedDelta(recallAt5(t, apiSearcher(adminOn, back), qs), recallAt5(t, apiSearcher(adminOff, back), qs))
			}
			d, dse := delta(eval)
			ud, udse := delta(unseenQ)
			fmt.Fprintf(&b, "| %.0f%% | %.1f | %.1f | %+.1f ±%.1f | %.1f | %.1f | %.1f vs %.1f (%d) | %.1f / %.1f (%d) | %+.1f ±%.1f |\n",
				100*float64(fed)/float64(len(set.Queries)), 100*allOn.R5, 100*allOff.R5, 100*d, 100*dse, 100*allOn.MRR, 100*allOff.MRR,
				100*seenOn.R5, 100*seenOff.R5, len(seenQ), 100*unOn.R5, 100*unOff.R5, len(unseenQ), 100*ud, 100*udse)
			se = allOn.R5SE
			if share == 0 && (allOn.R5 != allOff.R5 || allOn.MRR != allOff.MRR) {
				t.Fatalf("before any use the two daemons differ: %+v vs %+v", allOn, allOff)
			}
		}
		fmt.Fprintf(&b, "standard error of learned R@5 at the last share: ±%.1f", 100*se)
		t.Log(b.String())
	}
}
