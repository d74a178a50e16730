package registry_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/registry"
)

// catalogNames lists names of tools.
func catalogNames(ts []switchboard.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// sameAsUnknown checks that err is what an unknown name gets: the same
// code and the same message with the name swapped.
func sameAsUnknown(t *testing.T, what, name string, err, unknown error, unknownName string) {
	t.Helper()
	e, u := switchboard.AsError(err), switchboard.AsError(unknown)
	if e == nil || e.Code != switchboard.CodeToolNotFound || e.Code != u.Code ||
		strings.ReplaceAll(e.Message, name, unknownName) != u.Message || e.Details != nil {
		t.Errorf("%s %s: %v; want what an unknown name gets: %v", what, name, err, unknown)
	}
}

// One predicate decides List, Search, Get, Schemas and the meta tools, and
// a hidden tool reads exactly like one that does not exist.
func TestVisibleAgreesEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, openStore(t), nil)
	purge := tool("tasks.purge", "Purge every task.", switchboard.ClassMutate)
	purge.Approval = switchboard.ApprovalUserOnly
	if _, err := r.Register(ctx, switchboard.SourceHost, []switchboard.Tool{
		tool("tasks.create", "Create a task.", switchboard.ClassMutate),
		tool("tasks.delete", "Delete a task.", switchboard.ClassMutate),
		tool("media.upload", "Upload a task attachment.", switchboard.ClassMutate),
		purge,
	}); err != nil {
		t.Fatal(err)
	}
	live := registry.NewLive([]switchboard.Tool{
		{Name: "tasks.scroll", Description: "Scroll the task list.", Surface: switchboard.SurfaceBrowser, Class: switchboard.ClassUI, Origin: &switchboard.Origin{SessionID: "ses_b"}},
		{Name: "tasks.scroll", Description: "Scroll the task list (other tab).", Surface: switchboard.SurfaceBrowser, Class: switchboard.ClassUI, Origin: &switchboard.Origin{SessionID: "ses_c"}},
		{Name: "tasks.secret_view", Description: "Show the task vault.", Surface: switchboard.SurfaceBrowser, Class: switchboard.ClassUI, Origin: &switchboard.Origin{SessionID: "ses_b"}},
	})
	planner := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", Allow: []string{"tasks.*"}, Deny: []string{"*.delete", "*.secret_*"}}
	for _, c := range []struct {
		who  string
		ctx  context.Context
		want []string
	}{
		{"no principal", ctx, []string{"media.upload", "tasks.create", "tasks.delete", "tasks.purge", "tasks.scroll", "tasks.secret_view"}},
		{"user", switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}),
			[]string{"media.upload", "tasks.create", "tasks.delete", "tasks.purge", "tasks.scroll", "tasks.secret_view"}},
		{"unscoped agent", switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "free"}),
			[]string{"media.upload", "tasks.create", "tasks.delete", "tasks.scroll", "tasks.secret_view"}},
		{"scoped agent", switchboard.WithPrincipal(ctx, planner), []string{"tasks.create", "tasks.scroll"}},
	} {
		listed, err := r.ListWith(c.ctx, "", live)
		if err != nil {
			t.Fatal(err)
		}
		if got := catalogNames(listed); !slices.Equal(got, c.want) {
			t.Errorf("%s lists %v, want %v", c.who, got, c.want)
		}
		found, err := r.SearchMeta(c.ctx, switchboard.SearchQuery{Query: "task", Limit: 50}, live)
		if err != nil {
			t.Fatal(err)
		}
		var hits []string
		for _, h := range append(found.Items, found.OpenTab...) {
			hits = append(hits, h.Name)
		}
		slices.Sort(hits)
		if !slices.Equal(hits, c.want) {
			t.Errorf("%s finds %v, want %v", c.who, hits, c.want)
		}
		_, unknown := r.Describe(c.ctx, "tasks.nope", live)
		for _, name := range []string{"media.upload", "tasks.create", "tasks.delete", "tasks.purge", "tasks.scroll", "tasks.secret_view"} {
			d, err := r.Describe(c.ctx, name, live)
			if !slices.Contains(c.want, name) {
				sameAsUnknown(t, c.who+" describes", name, err, unknown, "tasks.nope")
				if _, err := r.Get(c.ctx, name); name != "tasks.scroll" && name != "tasks.secret_view" {
					_, unknownGet := r.Get(c.ctx, "tasks.nope")
					sameAsUnknown(t, c.who+" gets", name, err, unknownGet, "tasks.nope")
					_, _, err = r.Schemas(c.ctx, name)
					sameAsUnknown(t, c.who+" gets the schemas of", name, err, unknownGet, "tasks.nope")
				}
				continue
			}
			if err != nil || d.Name != name {
				t.Errorf("%s describes %s: %+v %v", c.who, name, d, err)
			}
		}
		if d, _ := r.Describe(c.ctx, "tasks.scroll", live); d.Origin == nil || d.Origin.SessionID != "ses_b" {
			t.Errorf("%s: the live tool of the smallest session id should win: %+v", c.who, d.Origin)
		}
	}
}

// Options.Approval (the approval floor) hides from agents what it makes
// user-only, like a declared user-only.
func TestVisibleFollowsTheApprovalFloor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, openStore(t), &registry.Options{Approval: func(t switchboard.Tool) switchboard.Approval {
		if t.Class == switchboard.ClassMutate {
			return switchboard.ApprovalUserOnly
		}
		return t.Approval
	}})
	if _, err := r.Register(ctx, switchboard.SourceHost, []switchboard.Tool{
		tool("tasks.create", "Create a task.", switchboard.ClassMutate),
		tool("tasks.list", "List tasks.", switchboard.ClassRead),
	}); err != nil {
		t.Fatal(err)
	}
	agent := switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "a"})
	if l, _ := r.List(agent, ""); !slices.Equal(catalogNames(l), []string{"tasks.list"}) {
		t.Errorf("agent lists %v", catalogNames(l))
	}
	if _, err := r.Get(agent, "tasks.create"); switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
		t.Errorf("agent gets a floor-user-only tool: %v", err)
	}
	if l, _ := r.List(ctx, ""); len(l) != 2 {
		t.Errorf("without a principal: %v", catalogNames(l))
	}
}

// A regex search matches the open tabs' tools by the same pattern as the
// catalog, not by the words of the pattern's text, and with the same
// visibility.
func TestSearchMetaRegexOpenTabs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, openStore(t), nil)
	if _, err := r.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool("tasks.create", "Create a task.", switchboard.ClassMutate)}); err != nil {
		t.Fatal(err)
	}
	live := registry.NewLive([]switchboard.Tool{
		{Name: "view.scroll_to", Description: "Scroll the page.", Surface: switchboard.SurfaceBrowser, Class: switchboard.ClassUI, Origin: &switchboard.Origin{SessionID: "ses_b"}},
		{Name: "zoo.feed_llamas", Description: "Feed the llamas in the zoo view.", Surface: switchboard.SurfaceBrowser, Class: switchboard.ClassUI, Origin: &switchboard.Origin{SessionID: "ses_b"}},
		{Name: "zoo.secret_pen", Description: "Open the hidden pen of the zoo view.", Surface: switchboard.SurfaceBrowser, Class: switchboard.ClassUI, Origin: &switchboard.Origin{SessionID: "ses_b"}},
	})
	agent := switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "keeper", Deny: []string{"*.secret_*"}})
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{`^view\.`, []string{"view.scroll_to"}}, // the words "view" would find the zoo's tools too
		{`^zoo\.`, []string{"zoo.feed_llamas"}},
		{`(?i)LLAMAS$`, []string{"zoo.feed_llamas"}},
		{`llama\b`, nil}, // the word "llama" would match by its stem
	} {
		found, err := r.SearchMeta(agent, switchboard.SearchQuery{Query: c.pattern, Regex: true}, live)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range found.OpenTab {
			got = append(got, h.Name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("regex %s finds open-tab tools %v, want %v", c.pattern, got, c.want)
		}
	}
}
