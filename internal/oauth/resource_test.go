package oauth_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/oauth"
)

func TestMetadataURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ resource, want string }{
		{"https://app.example.com/mcp", "https://app.example.com/.well-known/oauth-protected-resource/mcp"},
		{"https://app.example.com/tools/mcp/", "https://app.example.com/.well-known/oauth-protected-resource/tools/mcp"},
		{"http://127.0.0.1:7766/mcp", "http://127.0.0.1:7766/.well-known/oauth-protected-resource/mcp"},
		{"https://app.example.com", "https://app.example.com/.well-known/oauth-protected-resource"},
		{"ftp://app.example.com/mcp", ""},
		{"https://app.example.com/mcp?x=1", ""},
	} {
		if got := (oauth.Resource{URL: tc.resource}).MetadataURL(); got != tc.want {
			t.Errorf("MetadataURL(%s) = %q, want %q", tc.resource, got, tc.want)
		}
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	r := oauth.Resource{URL: "https://app.example.com/mcp"}
	var got []string
	for p := range r.Routes() {
		got = append(got, p)
	}
	slices.Sort(got)
	if want := []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"}; !slices.Equal(got, want) {
		t.Fatalf("routes %v, want %v", got, want)
	}
}

func TestChallenge(t *testing.T) {
	t.Parallel()
	r := oauth.Resource{URL: "https://app.example.com/mcp", Scope: "switchboard"}
	meta := `resource_metadata="https://app.example.com/.well-known/oauth-protected-resource/mcp"`
	for _, tc := range []struct{ code, desc, want string }{
		{"", "ignored without a code", `Bearer scope="switchboard", ` + meta},
		{oauth.ErrInvalidToken, "expired", `Bearer error="invalid_token", error_description="expired", scope="switchboard", ` + meta},
		// A description can never end the quoted string or add a parameter.
		{oauth.ErrInsufficientScope, "needs \"mcp\"\\\r\n, x=\"y", `Bearer error="insufficient_scope", error_description="needs  mcp    , x= y", scope="switchboard", ` + meta},
	} {
		if got := r.Challenge(tc.code, tc.desc); got != tc.want {
			t.Errorf("Challenge(%q, %q)\n got %s\nwant %s", tc.code, tc.desc, got, tc.want)
		}
	}
}

func TestAgentID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ client, want string }{
		{"claude-desktop", "oauth-claude-desktop"},
		{"Claude", "oauth-claude-"}, // changed: hashed (prefix checked below)
		{"https://app.example/client.json", "oauth-https---app.example-client.json-"},
		{strings.Repeat("a", 100), "oauth-aaaa"},
	} {
		got := oauth.AgentID(tc.client)
		if !strings.HasPrefix(got, tc.want) || len(got) > 64 {
			t.Errorf("AgentID(%q) = %q, want prefix %q and at most 64 bytes", tc.client, got, tc.want)
		}
	}
	// Case and punctuation variants of one id are different clients.
	if a, b := oauth.AgentID("client"), oauth.AgentID("Client"); a == b {
		t.Fatalf("AgentID(client) = AgentID(Client) = %q", a)
	}
	if a, b := oauth.AgentID("a/b"), oauth.AgentID("a:b"); a == b {
		t.Fatalf("AgentID(a/b) = AgentID(a:b) = %q", a)
	}
}

func TestScopesAndPrincipal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scopes []string
		want   []string
	}{
		{[]string{"mcp"}, nil},
		{[]string{"mcp", "tools:tasks.*", "tools:deck.export"}, []string{"tasks.*", "deck.export"}},
		{[]string{"mcp", "tools:"}, []string{"no tool"}},        // asked to narrow, named nothing valid: nothing
		{[]string{"mcp", "tools:Tasks/*"}, []string{"no tool"}}, // an invalid glob never widens
	} {
		if got := oauth.Scopes(tc.scopes); !slices.Equal(got, tc.want) {
			t.Errorf("Scopes(%v) = %v, want %v", tc.scopes, got, tc.want)
		}
	}
	p := oauth.Principal("cli", "alice", []string{"mcp"})
	if p.String() != "agent:oauth-cli" || p.ActsFor() != "user:alice" {
		t.Fatalf("principal %s acting for %s", p, p.ActsFor())
	}
}
