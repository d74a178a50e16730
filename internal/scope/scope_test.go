package scope_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/sqlite"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"tasks.*", "tasks.create", true},
		{"tasks.*", "tasks.sub.delete", true},
		{"tasks.*", "task.create", false},
		{"tasks.*", "tasks", false},
		{"*.delete", "tasks.delete", true},
		{"*.delete", "tasks.delete_all", false},
		{"*", "anything.at.all", true},
		{"tasks.?et", "tasks.get", true},
		{"tasks.?et", "tasks.sets", false},
		{"*a*b*c", "xaybzc", true},
		{"*a*b*c", "xaybz", false},
		{"exact.name", "exact.name", true},
		{"exact.name", "exact.names", false},
		{"", "", true},
	} {
		if got := scope.Match(c.pattern, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

func TestAllows(t *testing.T) {
	t.Parallel()
	agent := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", Allow: []string{"tasks.*"}, Deny: []string{"*.delete"}}
	user := switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin", Allow: []string{"none"}}
	open := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "free"}
	for _, c := range []struct {
		p    switchboard.Principal
		name string
		want bool
	}{
		{agent, "tasks.create", true},
		{agent, "tasks.delete", false}, // deny wins over allow
		{agent, "media.upload", false},
		{open, "media.upload", true},
		{user, "tasks.delete", true}, // users are unscoped
	} {
		if got := scope.Allows(c.p, c.name); got != c.want {
			t.Errorf("Allows(%s, %s) = %v, want %v", c.p, c.name, got, c.want)
		}
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	toks := scope.NewTokens(st, nil)
	created, err := toks.Create(ctx, scope.TokenRequest{Agent: "planner", Allow: []string{"tasks.*"}, Deny: []string{"*.delete"},
		PanelScope: switchboard.PanelScope{Panels: []string{"project.*"}, Slots: []string{"sidebar"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !scope.IsAgentToken(created.Token) || created.Hash == created.Token {
		t.Fatalf("created %+v", created)
	}
	p, err := toks.Authenticate(ctx, created.Token)
	if err != nil || p.Kind != switchboard.PrincipalAgent || p.ID != "planner" || len(p.Allow) != 1 || p.Deny[0] != "*.delete" ||
		p.Panels[0] != "project.*" || p.Slots[0] != "sidebar" {
		t.Fatalf("authenticate: %+v %v", p, err)
	}
	for _, bad := range []string{"", "sbt_", created.Token + "x", "sbt_" + created.ID + ".wrong", "admin-token"} {
		if _, err := toks.Authenticate(ctx, bad); switchboard.CodeOf(err) != switchboard.CodeUnauthorized {
			t.Errorf("token %q: %v, want UNAUTHORIZED", bad, err)
		}
	}
	if _, err := toks.Revoke(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := toks.Authenticate(ctx, created.Token); switchboard.CodeOf(err) != switchboard.CodeUnauthorized {
		t.Fatalf("revoked token: %v, want UNAUTHORIZED", err)
	}
	for _, c := range []scope.TokenRequest{
		{Agent: "Bad Name"},
		{Agent: "ok", Allow: []string{"tasks/*"}},
		{Agent: "ok", Deny: []string{""}},
		{Agent: "ok", PanelScope: switchboard.PanelScope{Panels: []string{"Project Settings"}}},
		{Agent: "ok", PanelScope: switchboard.PanelScope{Slots: []string{""}}},
		{Agent: "ok", User: "user:"},
		{Agent: "ok", User: "agent:planner"},
		{Agent: "ok", User: "session:ses_1"},
		{Agent: "ok", User: "user:al ice"},
		{Agent: "ok", User: "user:-alice"},
		{Agent: "ok", User: "user:alice\n"},
		{Agent: "oauth-desktop"}, // OAuth clients' agents are named so
		{Agent: "ok", User: "user:" + strings.Repeat("a", 201)},
	} {
		if _, err := toks.Create(ctx, c); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Errorf("create %+v: %v, want INVALID_INPUT", c, err)
		}
	}
}

// A token names the person its agent acts for; one without acts for the
// operator and says so.
func TestTokenUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	toks := scope.NewTokens(st, nil)
	for _, c := range []struct{ user, want, actsFor string }{
		{"user:alice", "user:alice", "user:alice"},
		{"bob", "user:bob", "user:bob"},
		{"alice@example.com", "user:alice@example.com", "user:alice@example.com"},
		{"auth0|42", "user:auth0|42", "user:auth0|42"},
		{"", "", switchboard.Operator},
	} {
		created, err := toks.Create(ctx, scope.TokenRequest{Agent: "planner", User: c.user})
		if err != nil {
			t.Fatalf("user %q: %v", c.user, err)
		}
		if created.User != c.want || created.ActsFor != c.actsFor {
			t.Errorf("user %q: stored %q acting for %q, want %q for %q", c.user, created.User, created.ActsFor, c.want, c.actsFor)
		}
		p, err := toks.Authenticate(ctx, created.Token)
		if err != nil || p.User != c.want || p.ActsFor() != c.actsFor || p.String() != "agent:planner" {
			t.Errorf("user %q: authenticated as %+v (acts for %s), %v", c.user, p, p.ActsFor(), err)
		}
	}
	list, err := toks.List(ctx)
	if err != nil || len(list) != 5 || list[4].ActsFor != switchboard.Operator || list[0].ActsFor != "user:alice" {
		t.Fatalf("list: %+v %v", list, err)
	}
}

func TestAllowsPanel(t *testing.T) {
	t.Parallel()
	settings := scope.PanelTarget{Panel: "project.settings", Slot: "main"}
	sidebar := scope.PanelTarget{Panel: "booking.form", Slot: "sidebar"}
	mine := scope.PanelTarget{Slot: "sidebar", Own: true}
	theirs := scope.PanelTarget{Slot: "sidebar"}
	for _, c := range []struct {
		name string
		ps   switchboard.PanelScope
		t    scope.PanelTarget
		want bool
	}{
		{"no scope admits a host panel", switchboard.PanelScope{}, settings, true},
		{"no scope admits another's composed panel", switchboard.PanelScope{}, theirs, true},
		{"a panel glob admits its panels", switchboard.PanelScope{Panels: []string{"project.*"}}, settings, true},
		{"a panel glob refuses others", switchboard.PanelScope{Panels: []string{"project.*"}}, sidebar, false},
		{"a panel-limited agent keeps its own composed panels", switchboard.PanelScope{Panels: []string{"project.*"}}, mine, true},
		{"a panel-limited agent does not see another's composed panel", switchboard.PanelScope{Panels: []string{"*"}}, theirs, false},
		{"a slot glob admits its slot", switchboard.PanelScope{Slots: []string{"side*"}}, sidebar, true},
		{"a slot glob refuses other slots", switchboard.PanelScope{Slots: []string{"sidebar"}}, settings, false},
		{"a slot limit applies to own panels too", switchboard.PanelScope{Slots: []string{"main"}}, mine, false},
		{"both must hold", switchboard.PanelScope{Panels: []string{"booking.*"}, Slots: []string{"main"}}, sidebar, false},
	} {
		if got := scope.AllowsPanel(c.ps, c.t); got != c.want {
			t.Errorf("%s: AllowsPanel(%+v, %+v) = %v", c.name, c.ps, c.t, got)
		}
	}
	if scope.AllowsSlot(switchboard.PanelScope{Slots: []string{"sidebar"}}, "main") || !scope.AllowsSlot(switchboard.PanelScope{}, "main") {
		t.Error("AllowsSlot")
	}
}

// A task's envelope scopes each project: a read project admits only its
// read (and view-only) tools, a write project all of them, whatever the
// allow globs say; a tool of no listed project passes the allow globs;
// deny holds for every tool. A tool whose class is not known is no read.
func TestEnvelopeAdmits(t *testing.T) {
	t.Parallel()
	env := switchboard.TaskScope{
		Projects: []switchboard.ProjectScope{{Name: "finance", Access: switchboard.ProjectRead},
			{Name: "design", Access: switchboard.ProjectWrite, Allow: []string{"design.slides.*"}}, {Name: "legacy"}, {Name: "Q3 board", Access: switchboard.ProjectRead}},
		Allow: []string{"billing.read", "design.*"}, Deny: []string{"design.slides.delete"},
	}
	for _, c := range []struct {
		name  string
		class switchboard.Class
		want  bool
	}{
		{"finance.read", switchboard.ClassRead, true},
		{"finance.open", switchboard.ClassUI, true},
		{"finance.write", switchboard.ClassMutate, false},
		{"finance.export", switchboard.ClassJob, false},
		{"finance.read", "", false},
		{"design.slides.edit", switchboard.ClassMutate, true},
		{"design.slides.delete", switchboard.ClassMutate, false}, // deny wins
		{"design.notes.edit", switchboard.ClassMutate, true},     // not the project's: allow admits it
		{"legacy.write", switchboard.ClassMutate, true},          // no access said: write
		{"billing.read", switchboard.ClassRead, true},
		{"billing.write", switchboard.ClassMutate, false},
		{"financial.write", switchboard.ClassMutate, false}, // not finance's: no allow glob admits it
		{"finance", switchboard.ClassMutate, false},
	} {
		if got := scope.EnvelopeAdmits(env, c.name, c.class); got != c.want {
			t.Errorf("EnvelopeAdmits(%s, %s) = %v, want %v", c.name, c.class, got, c.want)
		}
	}
	agent := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "assistant", Allow: []string{"finance.*"}, Task: &env}
	if scope.AllowsTool(agent, "finance.write", switchboard.ClassMutate) || !scope.AllowsTool(agent, "finance.read", switchboard.ClassRead) ||
		scope.AllowsTool(agent, "billing.read", switchboard.ClassRead) {
		t.Error("AllowsTool must pass both the envelope and the agent's own scope")
	}
}
