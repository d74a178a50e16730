package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// A client identified by a client ID metadata document (the MCP spec's
// preferred registration): the server fetches the document from the
// client_id URL, checks it names itself, and runs the same flow; the
// consent page says where the client's identity comes from and warns when
// its name imitates a well-known client's. A document that names another
// client_id is refused without a redirect, and the default fetcher
// refuses non-public addresses.
func TestOAuthEmbeddedClientMetadataDocument(t *testing.T) {
	t.Parallel()
	docs := map[string]map[string]any{}
	meta := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(d)
	}))
	t.Cleanup(meta.Close)
	redirect := "http://127.0.0.1:7777/callback"
	docs["/good.json"] = map[string]any{"client_id": meta.URL + "/good.json", "client_name": "Doc Client", "redirect_uris": []string{redirect}}
	docs["/lookalike.json"] = map[string]any{"client_id": meta.URL + "/lookalike.json", "client_name": "Cl4ude", "redirect_uris": []string{redirect}}
	docs["/other.json"] = map[string]any{"client_id": meta.URL + "/good.json", "client_name": "Doc Client", "redirect_uris": []string{redirect}}

	start := func(fetch *http.Client) string {
		ctx := context.Background()
		st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		srv := httptest.NewUnstartedServer(nil)
		d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken, OAuth: daemon.OAuthOptions{
			Resource: "http://" + srv.Listener.Addr().String() + "/mcp", LoginURL: hostLogin, MetadataHTTPClient: fetch}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		registerWhoami(t, d)
		srv.Config.Handler = d.Handler()
		srv.Start()
		t.Cleanup(srv.Close)
		return srv.URL
	}
	base := start(meta.Client())

	f := newFlow(t, base)
	f.client = meta.URL + "/good.json"
	access, _ := f.tokens("user:alice")
	if got, err := whoami(t, base, access); err != nil || !strings.Contains(got, "user:alice") || !strings.Contains(got, "agent:oauth-https---127.0.0.1") {
		t.Fatalf("whoami = %s %v", got, err)
	}

	page := func(f *flow) string {
		_, ch := pkce()
		res, err := f.hc.Get(f.signIn("user:alice", ch))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if p := page(f); !strings.Contains(p, "identified by its metadata at") || strings.Contains(p, `id="lookalike"`) || !strings.Contains(p, `id="redirect-host">127.0.0.1:7777<`) {
		t.Fatalf("consent page for a document client:\n%s", p)
	}
	look := newFlow(t, base)
	look.client = meta.URL + "/lookalike.json"
	if p := page(look); !strings.Contains(p, `id="lookalike"`) || !strings.Contains(p, "<strong>Claude</strong>") {
		t.Fatalf("consent page for a look-alike name has no warning:\n%s", p)
	}

	wrong := newFlow(t, base)
	wrong.client = meta.URL + "/other.json"
	_, ch := pkce()
	if res := wrong.authorize(wrong.params(ch)); res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" {
		t.Fatalf("a document naming another client_id: %d %q", res.StatusCode, res.Header.Get("Location"))
	}

	// The default fetcher will not reach the loopback metadata server.
	g := newFlow(t, start(nil))
	g.client = meta.URL + "/good.json"
	if res := g.authorize(g.params(ch)); res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" {
		t.Fatalf("a document on a loopback address with the default fetcher: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
}
