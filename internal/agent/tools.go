package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/search"
)

// Meta tools offered when the catalog is too large to show in full.
const (
	metaSearch   = "search_tools"
	metaDescribe = "describe_tool"
	// maxDigest bounds the one-line tool listing in a deferred prompt.
	maxDigest = 200
	// Past groupAbove catalog tools a deferred prompt lists groups
	// (at most maxGroups lines) instead of one line a tool.
	groupAbove = 60
	maxGroups  = 30
)

type toolKind int

const (
	kindCatalog  toolKind = iota // an api tool from the registry
	kindBrowser                  // a live browser tool of the run's session
	kindFrontend                 // a client-provided AG-UI tool: the client runs it
	kindMeta                     // search_tools / describe_tool, answered in-process
)

// offered is one tool as the model knows it.
type offered struct {
	model   string // the name the model calls (provider-safe)
	real    string // the tool's name in the catalog / session / client
	kind    toolKind
	desc    string
	summary string
	schema  json.RawMessage
	pinned  bool
	ui      *switchboard.UIMeta // the tool's renderer hints, sent with its calls
}

// toolset is what one run offers the model, built once per run from the
// tools actually active for it: the catalog's api tools, the bound
// session's live browser tools and the client's frontend tools. Above the
// deferral threshold only pinned tools, browser and frontend tools and the
// meta tools go out with schemas; the rest are listed by name and summary
// and load when the model describes them.
type toolset struct {
	byModel  map[string]*offered
	byReal   map[string]*offered
	order    []*offered
	deferred bool

	live *registry.Live        // the bound tab's browser tools, for describe_tool
	who  switchboard.Principal // the run's assistant, as the meta tools see the catalog

	mu     sync.Mutex      // describe_tool runs in parallel with other calls
	loaded map[string]bool // real names the model described
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// modelName maps a tool name to one every provider accepts
// (^[a-zA-Z0-9_-]{1,64}$), unique within the set.
func (ts *toolset) modelName(real string) string {
	n := unsafeName.ReplaceAllString(real, "_")
	if len(n) > 60 {
		n = n[:60]
	}
	if n == "" {
		n = "tool"
	}
	cand := n
	for i := 2; ts.byModel[cand] != nil; i++ {
		cand = fmt.Sprintf("%s_%d", n, i)
	}
	return cand
}

func (ts *toolset) add(o *offered) {
	if ts.byReal[o.real] != nil && o.kind != kindMeta {
		return // a higher-precedence source already offers this name
	}
	o.model = ts.modelName(o.real)
	ts.byModel[o.model] = o
	if o.kind != kindMeta {
		ts.byReal[o.real] = o
	}
	ts.order = append(ts.order, o)
}

// buildToolset gathers the run's tools. Frontend tools win over browser
// tools and browser tools over catalog tools of the same name: the closer
// to the user, the more specific. Catalog and browser tools are what the
// assistant may see (registry.Visible): a user-only tool is never offered
// to the model.
func (rt *Runtime) buildToolset(ctx context.Context, run *Run, frontend []agui.Tool) (*toolset, error) {
	ctx = switchboard.WithPrincipal(ctx, run.principal)
	ts := &toolset{byModel: map[string]*offered{}, byReal: map[string]*offered{}, loaded: map[string]bool{}, who: run.principal}
	for _, t := range frontend {
		ts.add(&offered{real: t.Name, kind: kindFrontend, desc: t.Description, summary: firstLine(t.Description), schema: t.Parameters})
	}
	if run.session != "" && rt.browser != nil {
		live, err := rt.browser.Tools(ctx, run.session)
		if err != nil && switchboard.CodeOf(err) != switchboard.CodeNotFound {
			return nil, err
		}
		live = slices.DeleteFunc(live, func(t switchboard.Tool) bool { return !rt.reg.Visible(ctx, t) })
		ts.live = registry.NewLive(live)
		for _, t := range live {
			ts.add(&offered{real: t.Name, kind: kindBrowser, desc: t.Description, summary: search.SummaryOf(t), schema: t.InputSchema, pinned: true, ui: t.UI})
		}
	}
	api, err := rt.reg.List(ctx, switchboard.SurfaceAPI)
	if err != nil {
		return nil, err
	}
	for _, t := range api {
		ts.add(&offered{real: t.Name, kind: kindCatalog, desc: t.Description, summary: search.SummaryOf(t), schema: t.InputSchema, pinned: t.Pinned, ui: t.UI})
	}
	if len(api) > rt.opts.DeferThreshold {
		ts.deferred = true
		ts.add(&offered{real: metaSearch, kind: kindMeta,
			desc:   "Search the app's tool catalog by what you want to do. Returns names and one-line summaries; describe a tool before calling it.",
			schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what you want to do, in a few words"},"limit":{"type":"integer","minimum":1,"maximum":20},"cursor":{"type":"string","description":"nextCursor of the previous answer, for the next page"},"regex":{"type":"boolean","description":"query is an RE2 pattern matched against tool names, summaries and descriptions, e.g. ^deck\\. or (?i)invoice"}},"required":["query"]}`)})
		ts.add(&offered{real: metaDescribe, kind: kindMeta,
			desc:   "Get a tool's full description and input schema. After this the tool can be called directly.",
			schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"the tool's name as listed or found by search_tools"}},"required":["name"]}`)})
	}
	return ts, nil
}

// modelTools is the tool list of one request.
func (ts *toolset) modelTools() []model.Tool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []model.Tool
	for _, o := range ts.order {
		if ts.deferred && o.kind == kindCatalog && !o.pinned && !ts.loaded[o.real] {
			continue
		}
		out = append(out, model.Tool{Name: o.model, Description: o.desc, Schema: o.schema})
	}
	return out
}

// lookup finds what a model's call names: its model name, or (a model that
// guessed) the tool's real name.
func (ts *toolset) lookup(name string) *offered {
	if o := ts.byModel[name]; o != nil {
		return o
	}
	return ts.byReal[name]
}

// toModelName translates a real tool name in the history into the name the
// model knows it by; names no longer offered are made provider-safe.
func (ts *toolset) toModelName(real string) string {
	if o := ts.byReal[real]; o != nil {
		return o.model
	}
	if o := ts.byModel[real]; o != nil && o.kind == kindMeta {
		return o.model
	}
	return unsafeName.ReplaceAllString(real, "_")
}

// systemPrompt is the instructions plus the tool snippets, derived only from
// the tools active for this run.
func (ts *toolset) systemPrompt(base string, ctxItems []agui.Context) string {
	var b strings.Builder
	b.WriteString(base)
	var browser, frontend, catalog []*offered
	for _, o := range ts.order {
		switch o.kind {
		case kindBrowser:
			browser = append(browser, o)
		case kindFrontend:
			frontend = append(frontend, o)
		case kindCatalog:
			catalog = append(catalog, o)
		}
	}
	if len(browser) > 0 {
		b.WriteString("\n\nThe user's open page offers these view tools (they move the view in the user's tab; they change no data):\n")
		listTools(&b, browser, len(browser))
	}
	if len(frontend) > 0 {
		b.WriteString("\n\nThe client application runs these tools itself; calling one ends your turn until the client answers:\n")
		listTools(&b, frontend, len(frontend))
	}
	if ts.deferred && len(catalog) > groupAbove {
		fmt.Fprintf(&b, "\n\nThe app has %d tools. Call %s to find the right one and %s to load its schema before calling it.\n", len(catalog), metaSearch, metaDescribe)
		ts.listGroups(&b, catalog)
	} else if ts.deferred {
		fmt.Fprintf(&b, "\n\nThe app has %d tools. Call %s to find the right one and %s to load its schema before calling it. Some of them:\n", len(catalog), metaSearch, metaDescribe)
		sorted := append([]*offered(nil), catalog...)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].pinned && !sorted[j].pinned })
		listTools(&b, sorted, maxDigest)
	} else if len(catalog) == 0 && len(browser) == 0 && len(frontend) == 0 {
		b.WriteString("\n\nNo tools are available right now; answer from what you know and say what you cannot do.")
	}
	if len(ctxItems) > 0 {
		b.WriteString("\n\nContext from the application:\n")
		for _, c := range ctxItems {
			fmt.Fprintf(&b, "- %s: %s\n", c.Description, c.Value)
		}
	}
	return b.String()
}

// listGroups lists a large catalog by group (search.Groups: namespaces,
// else words the names share) so the prompt holds tens of lines, not one
// a tool; pinned tools are listed by name first, since they are loaded.
func (ts *toolset) listGroups(b *strings.Builder, catalog []*offered) {
	var pinned []*offered
	var rest []switchboard.Tool
	model := map[string]string{}
	for _, o := range catalog {
		if o.pinned {
			pinned = append(pinned, o)
			continue
		}
		rest = append(rest, switchboard.Tool{Name: o.real})
		model[o.real] = o.model
	}
	if len(pinned) > 0 {
		b.WriteString("Loaded:\n")
		listTools(b, pinned, maxDigest)
	}
	groups, other := search.Groups(rest, maxGroups)
	fmt.Fprintf(b, "The others, by group (%s with the group's name lists it):\n", metaSearch)
	for _, g := range groups {
		b.WriteString(g.Line(func(n string) string { return model[n] }) + "\n")
	}
	if other > 0 {
		fmt.Fprintf(b, "- and %d more in no group: search by what you want to do\n", other)
	}
}

func listTools(b *strings.Builder, os []*offered, max int) {
	for i, o := range os {
		if i == max {
			fmt.Fprintf(b, "- … and %d more\n", len(os)-max)
			break
		}
		fmt.Fprintf(b, "- %s: %s\n", o.model, o.summary)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// answerMeta runs a meta tool in-process through the registry's one
// implementation of search and describe (registry.SearchMeta,
// registry.Describe, shared with MCP), as the assistant may see the
// catalog; only the names, arguments and answers are this loop's.
func (rt *Runtime) answerMeta(ctx context.Context, ts *toolset, o *offered, args string) (string, error) {
	ctx = switchboard.WithPrincipal(ctx, ts.who)
	switch o.real {
	case metaSearch:
		var in struct {
			Query  string `json:"query"`
			Limit  int    `json:"limit"`
			Regex  bool   `json:"regex"`
			Cursor string `json:"cursor"`
		}
		if err := json.Unmarshal([]byte(argsOrEmpty(args)), &in); err != nil || strings.TrimSpace(in.Query) == "" {
			return "", switchboard.Errorf(switchboard.CodeInvalidInput, "%s needs {\"query\": \"...\"}", metaSearch)
		}
		if in.Limit <= 0 || in.Limit > 20 {
			in.Limit = 10
		}
		res, err := rt.reg.SearchMeta(ctx, switchboard.SearchQuery{Query: in.Query, Surface: switchboard.SurfaceAPI, Limit: in.Limit, Regex: in.Regex, Cursor: in.Cursor}, nil)
		if err != nil {
			return "", err
		}
		type hit struct {
			Name    string `json:"name"`
			Summary string `json:"summary"`
			Class   string `json:"class"`
		}
		hits := []hit{}
		for _, h := range res.Items {
			name := h.Name
			if o := ts.byReal[h.Name]; o != nil {
				name = o.model
			}
			hits = append(hits, hit{Name: name, Summary: h.Summary, Class: string(h.Class)})
		}
		out := map[string]any{"tools": hits}
		if res.NextCursor != "" {
			out["nextCursor"] = res.NextCursor // a group longer than a page
		}
		b, _ := json.Marshal(out)
		return string(b), nil
	case metaDescribe:
		var in struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(argsOrEmpty(args)), &in); err != nil || in.Name == "" {
			return "", switchboard.Errorf(switchboard.CodeInvalidInput, "%s needs {\"name\": \"...\"}", metaDescribe)
		}
		notFound := switchboard.Errorf(switchboard.CodeToolNotFound, "no tool named %q; use %s to find one", in.Name, metaSearch)
		t := ts.lookup(in.Name)
		if t == nil || t.kind == kindMeta {
			return "", notFound
		}
		out := map[string]any{"name": t.model, "description": t.desc, "inputSchema": t.schema}
		if t.kind != kindFrontend { // the client's own tools are not the catalog's
			full, err := rt.reg.Describe(ctx, t.real, ts.live)
			switch {
			case switchboard.CodeOf(err) == switchboard.CodeToolNotFound:
				return "", notFound // gone since the run began
			case err != nil:
				return "", err
			}
			out["description"], out["inputSchema"] = full.Description, full.InputSchema
			out["class"], out["approval"] = full.Class, full.Approval
			if len(full.OutputSchema) > 0 {
				out["outputSchema"] = full.OutputSchema
			}
		}
		ts.mu.Lock()
		ts.loaded[t.real] = true
		ts.mu.Unlock()
		b, _ := json.Marshal(out)
		return string(b), nil
	}
	return "", switchboard.Errorf(switchboard.CodeToolNotFound, "no meta tool %q", o.real)
}

func argsOrEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}
