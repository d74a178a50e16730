package bench

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/benchkit"
	"github.com/switchboardhq/switchboard/internal/search"
)

// baselines are the keyword baselines of shared/benchdata/toolret/README.md
// (percent), printed beside our numbers.
var baselines = map[string][]struct {
	setup            string
	r1, r5, r10, mrr float64
}{
	"toolbench": {
		{"Okapi BM25 (k1 1.2, b 0.75), name+description, names split", 26.9, 56.9, 64.6, 67.1},
		{"SQLite FTS5, porter stemmer, names pre-split", 28.7, 59.7, 69.7, 70.7},
	},
	"sealtools": {
		{"Okapi BM25, name+description", 39.6, 81.2, 89.5, 92.4},
		{"Okapi BM25, name+description+schema params", 43.5, 85.9, 92.3, 97.1},
	},
}

var retrievalSets = []string{"toolbench", "sealtools"}

func loadSets(t testing.TB) []*benchkit.RetrievalSet {
	t.Helper()
	dir, ok := benchkit.BenchdataDir()
	if !ok {
		t.Skipf("benchdata not found at %s: set SWITCHBOARD_BENCHDATA to the shared/benchdata directory", dir)
	}
	var sets []*benchkit.RetrievalSet
	for _, name := range retrievalSets {
		set, err := benchkit.LoadRetrievalSet(filepath.Join(dir, "toolret", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range set.Tools {
			if !benchkit.NameGrammar.MatchString(tool.Name) {
				t.Fatalf("%s: mapped name %q is outside the name grammar", name, tool.Name)
			}
		}
		sets = append(sets, set)
	}
	return sets
}

func row(setup string, s benchkit.RetrievalScores) string {
	return fmt.Sprintf("| %s | %.1f | %.1f | %.1f | %.1f |", setup, 100*s.R1, 100*s.R5, 100*s.R10, 100*s.MRR)
}

// TestRetrieval scores the index with its default settings on both sets and
// logs a Markdown table beside the README's baselines.
func TestRetrieval(t *testing.T) {
	for _, set := range loadSets(t) {
		x := search.New(nil)
		x.Replace(set.Tools)
		s, err := benchkit.EvaluateRetrieval(set.Queries, benchkit.IndexSearcher(x))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "\n%s: %d tools, %d queries\n| setup | R@1 | R@5 | R@10 | MRR |\n| --- | --- | --- | --- | --- |\n",
			set.Name, len(set.Tools), s.Queries)
		for _, base := range baselines[set.Name] {
			fmt.Fprintf(&b, "| %s (baseline) | %.1f | %.1f | %.1f | %.1f |\n", base.setup, base.r1, base.r5, base.r10, base.mrr)
		}
		b.WriteString(row("switchboard search.Index, defaults", s))
		fmt.Fprintf(&b, "\nstandard error: R@5 ±%.1f, MRR ±%.1f", 100*s.R5SE, 100*s.MRRSE)
		t.Log(b.String())
	}
}
