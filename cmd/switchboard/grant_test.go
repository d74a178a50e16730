package main

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// grant list shows users' grants to MCP clients, --user narrows it, and
// grant revoke ends one; an unknown id fails with NOT_FOUND.
func TestCLIGrants(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: testToken,
		OAuth: daemon.OAuthOptions{Resource: "http://" + srv.Listener.Addr().String() + "/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = d.Handler()
	srv.Start()
	t.Cleanup(func() { srv.Close(); d.Close() })
	// Grants as the consent page makes them (the flow itself is tested in
	// internal/daemon).
	for _, g := range []struct{ id, user string }{{"sbg_a", "user:alice"}, {"sbg_b", "user:bob"}} {
		if err := st.OAuthPut(ctx, switchboard.OAuthRecord{Kind: switchboard.OAuthGrant, ID: g.id, User: g.user, Client: "sbc_1",
			Data: []byte(`{"clientName":"Desk","agent":"oauth-sbc_1","redirectHost":"127.0.0.1:9","scopes":["mcp"]}`)}); err != nil {
			t.Fatal(err)
		}
	}
	admin := []string{"--addr", srv.URL, "--token", testToken}
	code, out, errs := run(t, append(admin, "grant", "list")...)
	if code != 0 || !strings.Contains(out, "sbg_a") || !strings.Contains(out, "sbg_b") || !strings.Contains(out, "oauth-sbc_1") {
		t.Fatalf("grant list: %d\n%s%s", code, out, errs)
	}
	code, out, _ = run(t, append(admin, "grant", "list", "--user", "user:alice")...)
	if code != 0 || !strings.Contains(out, "sbg_a") || strings.Contains(out, "sbg_b") {
		t.Fatalf("grant list --user user:alice: %d\n%s", code, out)
	}
	code, out, errs = run(t, append(admin, "grant", "revoke", "sbg_a")...)
	if code != 0 || !strings.Contains(out, "revoked sbg_a (oauth-sbc_1 for user:alice)") {
		t.Fatalf("grant revoke: %d %s %s", code, out, errs)
	}
	if r, err := st.OAuthGet(ctx, switchboard.OAuthGrant, "sbg_a"); err != nil || r.RevokedAt.IsZero() {
		t.Fatalf("the grant is not revoked: %+v %v", r, err)
	}
	if code, _, errs = run(t, append(admin, "grant", "revoke", "sbg_zzz")...); code == 0 || !strings.Contains(errs, "NOT_FOUND") {
		t.Fatalf("revoking an unknown grant: %d %s", code, errs)
	}
}
