package bench

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/benchkit"
	"github.com/switchboardhq/switchboard/internal/search"
)

// TestManifestSize compares what a model must read to know a catalog: the
// full manifest (every descriptor, as GET /tools returns it), the MCP
// tools/list view (name, description, inputSchema), a deferred listing (one
// "name: summary" line a tool) and bare names as the floor. Percentages are
// of the full manifest. Tokens are counted with o200k_base (the GPT-4o
// family's BPE; the vocabulary is embedded, so this works offline); other
// models' tokenizers differ by some percent, the ratios far less.
func TestManifestSize(t *testing.T) {
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	count := func(s string) int {
		ids, _, err := enc.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	sources := []struct {
		name  string
		tools []switchboard.Tool
	}{{"synthetic", benchkit.SyntheticCatalog(1000, 1)}}
	if dir, ok := benchkit.BenchdataDir(); ok {
		for _, name := range retrievalSets {
			set, err := benchkit.LoadRetrievalSet(filepath.Join(dir, "toolret", name))
			if err != nil {
				t.Fatal(err)
			}
			sources = append(sources, struct {
				name  string
				tools []switchboard.Tool
			}{name, set.Tools})
		}
	} else {
		t.Logf("benchdata not found at %s: synthetic catalog only", dir)
	}

	var b strings.Builder
	b.WriteString("\n| catalog | tools | full manifest | MCP tools/list view | deferred listing | grouped listing (lines) | names only |\n|---|---|---|---|---|---|---|\n")
	for _, src := range sources {
		for _, n := range []int{100, 500, 1000} {
			tools := spread(src.tools, n)
			full := mustJSON(t, switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion, Tools: tools})
			type mcpTool struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			}
			mcp := make([]mcpTool, len(tools))
			var listing, names strings.Builder
			for i, tool := range tools {
				mcp[i] = mcpTool{tool.Name, tool.Description, tool.InputSchema}
				fmt.Fprintf(&listing, "%s: %s\n", tool.Name, search.SummaryOf(tool))
				fmt.Fprintf(&names, "%s\n", tool.Name)
			}
			grouped, lines, covered := groupedListing(tools)
			nf, nm, nd, nn, ng := count(full), count(mustJSON(t, mcp)), count(listing.String()), count(names.String()), count(grouped)
			pc := func(a int) string { return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(nf)) }
			fmt.Fprintf(&b, "| %s | %d | %d | %d (%s) | %d (%s) | **%d (%s)**, %d lines, %.0f%% of tools in a group | %d (%s) |\n",
				src.name, len(tools), nf, nm, pc(nm), nd, pc(nd), ng, pc(ng), lines, covered, nn, pc(nn))
			// A large catalog's deferred listing must cost at most a tenth
			// of its full manifest.
			if n >= 500 && 10*ng > nf {
				t.Errorf("%s at %d tools: the grouped listing is %d tokens, over a tenth of the manifest's %d", src.name, n, ng, nf)
			}
		}
	}
	t.Log(b.String())
}

// groupedListing renders the groups of a deferred listing as the MCP
// search tool's description and the agent's prompt do: one line a group
// (at most 30) with three example names, and one line for the rest.
func groupedListing(tools []switchboard.Tool) (string, int, float64) {
	groups, other := search.Groups(tools, 30)
	var b strings.Builder
	for _, g := range groups {
		b.WriteString(g.Line(func(n string) string { return n }) + "\n")
	}
	lines := len(groups)
	if other > 0 {
		fmt.Fprintf(&b, "- and %d more in no group\n", other)
		lines++
	}
	return b.String(), lines, 100 * float64(len(tools)-other) / float64(len(tools))
}

// spread picks n tools evenly across s, so a sample of a set sorted by name
// spans all its namespaces.
func spread(s []switchboard.Tool, n int) []switchboard.Tool {
	if n >= len(s) {
		return s
	}
	out := make([]switchboard.Tool, n)
	for i := range out {
		out[i] = s[i*len(s)/n]
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
