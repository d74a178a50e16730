package registry

import (
	"context"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/search"
)

// This file is the one implementation of deferred disclosure's meta tools
// — search (names and one-liners) and describe (the full descriptor) —
// and of the catalog view they read: the catalog plus the live browser
// tools of open tabs, as the caller in the context may see it. MCP
// (switchboard_search, switchboard_describe) and the agent loop
// (search_tools, describe_tool) keep their own tool names, argument
// shapes and answers, pinned by their tests; what the tools find is
// decided here, once.

// Live is a set of browser tools advertised by open tabs, offered beside
// the catalog: one tool per name (the tab with the smallest session id
// wins, so answers are deterministic) and a search index over them. It is
// read-only once built.
type Live struct {
	tools []switchboard.Tool // sorted by name
	index *search.Index
}

// NewLive builds a Live from the tools tabs advertise (each with
// Origin.SessionID naming its tab).
func NewLive(tools []switchboard.Tool) *Live {
	all := slices.Clone(tools)
	slices.SortFunc(all, func(a, b switchboard.Tool) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(sessionOf(a), sessionOf(b))
	})
	all = slices.CompactFunc(all, func(a, b switchboard.Tool) bool { return a.Name == b.Name })
	x := search.New(nil)
	x.Replace(all)
	return &Live{tools: all, index: x}
}

func sessionOf(t switchboard.Tool) string {
	if t.Origin == nil {
		return ""
	}
	return t.Origin.SessionID
}

// get returns the live tool named name.
func (l *Live) get(name string) (switchboard.Tool, bool) {
	if l == nil {
		return switchboard.Tool{}, false
	}
	i, ok := slices.BinarySearchFunc(l.tools, name, func(t switchboard.Tool, n string) int { return strings.Compare(t.Name, n) })
	if !ok {
		return switchboard.Tool{}, false
	}
	return l.tools[i], true
}

// ListWith returns what the caller in ctx may see of the catalog and of
// live (nil: no tabs), sorted by name, optionally one surface. A live tool
// replaces a catalog declaration of the same name: the tab's version is
// what a call runs.
func (r *Registry) ListWith(ctx context.Context, surface switchboard.Surface, live *Live) ([]switchboard.Tool, error) {
	tools, err := r.List(ctx, surface)
	if err != nil || live == nil || len(live.tools) == 0 {
		return tools, err
	}
	// A tab's tool replaces the catalog's declaration of its name, except
	// one under an api tool's name: that is seen by no one (shadow.go),
	// and the api tool stays listed.
	var shown []switchboard.Tool
	names := map[string]bool{}
	for _, t := range live.tools {
		if r.shadows(t) {
			continue
		}
		names[t.Name] = true
		if r.Visible(ctx, t) {
			shown = append(shown, t)
		}
	}
	tools = slices.DeleteFunc(tools, func(t switchboard.Tool) bool { return names[t.Name] })
	for _, t := range shown {
		if surface == "" || t.Surface == surface {
			tools = append(tools, t)
		}
	}
	slices.SortFunc(tools, func(a, b switchboard.Tool) int { return strings.Compare(a.Name, b.Name) })
	return tools, nil
}

// Found is one answer of the search meta tool. Its OpenTab holds the
// matching live browser tools, each naming its tab, on the first page only
// and unless the query is for api tools.
type Found struct {
	switchboard.SearchResult
}

// SearchMeta answers the search meta tool: a page of the catalog for q
// and, beside it, the matching tools of live (nil: no tabs), all as the
// caller in ctx may see them.
func (r *Registry) SearchMeta(ctx context.Context, q switchboard.SearchQuery, live *Live) (Found, error) {
	res, err := r.Search(ctx, q)
	if err != nil {
		return Found{}, err
	}
	r.noteSearch(ctx, q) // a call that follows may teach the index (learn.go)
	out := Found{SearchResult: res}
	if live != nil && q.Cursor == "" && q.Surface != switchboard.SurfaceAPI {
		lq := switchboard.SearchQuery{Query: q.Query, Surface: switchboard.SurfaceBrowser, Limit: search.MaxLimit, Regex: q.Regex}
		if lres, err := live.index.Search(lq, func(t switchboard.Tool) bool { return r.Visible(ctx, t) }); err == nil {
			for _, h := range lres.Items {
				t, _ := live.get(h.Name)
				h.SessionID = sessionOf(t)
				out.OpenTab = append(out.OpenTab, h)
			}
		}
	}
	return out, nil
}

// Describe answers the describe meta tool: the tool named name as the
// caller in ctx may see it, live (nil: no tabs) first, since the tab's
// version is what a call runs, else the catalog's. TOOL_NOT_FOUND, with
// one message, when neither has it or the caller may not see it.
func (r *Registry) Describe(ctx context.Context, name string, live *Live) (switchboard.Tool, error) {
	if t, ok := live.get(name); ok && !r.shadows(t) {
		if !r.Visible(ctx, t) {
			return switchboard.Tool{}, notFound(name)
		}
		return t, nil
	}
	return r.Get(ctx, name)
}
