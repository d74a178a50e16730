package scope_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/scope"
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
	created, err := toks.Create(ctx, "planner", []string{"tasks.*"}, []string{"*.delete"})
	if err != nil {
		t.Fatal(err)
	}
	if !scope.IsAgentToken(created.Token) || created.Hash == created.Token {
		t.Fatalf("created %+v", created)
	}
	p, err := toks.Authenticate(ctx, created.Token)
	if err != nil || p.Kind != switchboard.PrincipalAgent || p.ID != "planner" || len(p.Allow) != 1 || p.Deny[0] != "*.delete" {
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
	for _, c := range []struct {
		agent       string
		allow, deny []string
	}{
		{"Bad Name", nil, nil},
		{"ok", []string{"tasks/*"}, nil},
		{"ok", nil, []string{""}},
	} {
		if _, err := toks.Create(ctx, c.agent, c.allow, c.deny); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Errorf("create %+v: %v, want INVALID_INPUT", c, err)
		}
	}
}
