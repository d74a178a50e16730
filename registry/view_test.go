package registry_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/registry"
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

// One predicate decides List, Search, Get and Schemas, and a hidden tool
// reads exactly like one that does not exist.
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
	planner := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", Allow: []string{"tasks.*"}, Deny: []string{"*.delete"}}
	all := []string{"media.upload", "tasks.create", "tasks.delete", "tasks.purge"}
	for _, c := range []struct {
		who  string
		ctx  context.Context
		want []string
	}{
		{"no principal", ctx, all},
		{"user", switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}), all},
		{"unscoped agent", switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "free"}),
			[]string{"media.upload", "tasks.create", "tasks.delete"}},
		{"scoped agent", switchboard.WithPrincipal(ctx, planner), []string{"tasks.create"}},
	} {
		listed, err := r.List(c.ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := catalogNames(listed); !slices.Equal(got, c.want) {
			t.Errorf("%s lists %v, want %v", c.who, got, c.want)
		}
		found, err := r.Search(c.ctx, switchboard.SearchQuery{Query: "task", Limit: 50}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var hits []string
		for _, h := range found.Items {
			hits = append(hits, h.Name)
		}
		slices.Sort(hits)
		if !slices.Equal(hits, c.want) {
			t.Errorf("%s finds %v, want %v", c.who, hits, c.want)
		}
		_, unknown := r.Get(c.ctx, "tasks.nope")
		for _, name := range all {
			got, err := r.Get(c.ctx, name)
			if slices.Contains(c.want, name) {
				if err != nil || got.Name != name {
					t.Errorf("%s gets %s: %+v %v", c.who, name, got, err)
				}
				continue
			}
			sameAsUnknown(t, c.who+" gets", name, err, unknown, "tasks.nope")
			_, _, err = r.Schemas(c.ctx, name)
			sameAsUnknown(t, c.who+" gets the schemas of", name, err, unknown, "tasks.nope")
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
