package daemon_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/client"
)

// Every bad input to the embedded authorization server is refused with
// the error the OAuth specs name, issues nothing, and never sends the
// browser anywhere the client did not register.
func TestOAuthEmbeddedRefusals(t *testing.T) {
	t.Parallel()
	for _, st := range durables(t) {
		t.Run(st.name, func(t *testing.T) {
			base := embeddedReplicas(t, st, 1)[0].srv.URL
			f := newFlow(t, base)
			f.register("Refusals client")
			_, challenge := pkce()

			// The authorization endpoint.
			noRedirect := func(name string, q url.Values) {
				t.Helper()
				res := f.authorize(q)
				if res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" {
					t.Errorf("%s: %d, Location %q; want 400 and no redirect", name, res.StatusCode, res.Header.Get("Location"))
				}
			}
			q := f.params(challenge)
			q.Set("client_id", "sbc_00000000000000000000000000000000")
			noRedirect("unknown client", q)
			q = f.params(challenge)
			q.Set("redirect_uri", "https://evil.example/cb")
			noRedirect("open redirect: an unregistered redirect_uri", q)
			q = f.params(challenge)
			q.Set("redirect_uri", f.redirect+"/../../elsewhere")
			noRedirect("a redirect_uri with another path", q)
			errorRedirect := func(name, want string, q url.Values) {
				t.Helper()
				res := f.authorize(q)
				loc, _ := url.Parse(res.Header.Get("Location"))
				if res.StatusCode != http.StatusFound || loc == nil || !strings.HasPrefix(loc.String(), f.redirect+"?") ||
					loc.Query().Get("error") != want || loc.Query().Get("code") != "" || loc.Query().Get("state") != "st-1" {
					t.Errorf("%s: %d %q, want a redirect to the client with error=%s", name, res.StatusCode, res.Header.Get("Location"), want)
				}
			}
			q = f.params(challenge)
			q.Set("code_challenge_method", "plain")
			errorRedirect("PKCE plain", "invalid_request", q)
			q = f.params(challenge)
			q.Del("code_challenge")
			q.Del("code_challenge_method")
			errorRedirect("no PKCE", "invalid_request", q)
			q = f.params(challenge)
			q.Set("resource", "https://other.example/mcp")
			errorRedirect("a token for another resource", "invalid_target", q)
			q = f.params(challenge)
			q.Set("response_type", "token")
			errorRedirect("implicit grant", "unauthorized_client", q)

			// The host's sign-in handshake.
			res := f.authorize(f.params(challenge))
			req := mustQuery(t, res.Header.Get("Location"), "request")
			tab := openTab(t, base, "user:alice")
			for _, tc := range []struct {
				name, token, request, user string
				want                       int
			}{
				{"a tab's token", tab, req, "user:alice", http.StatusForbidden},
				{"no token", "", req, "user:alice", http.StatusUnauthorized},
				{"the operator", mcpToken, req, "user:admin", http.StatusBadRequest},
				{"an agent", mcpToken, req, "agent:x", http.StatusBadRequest},
				{"unknown request", mcpToken, "sbr_nope", "user:alice", http.StatusNotFound},
			} {
				if code, m := f.postJSON("/api/v1/oauth/signins", tc.token, map[string]string{"request": tc.request, "user": tc.user}); code != tc.want {
					t.Errorf("sign-in with %s: %d %v, want %d", tc.name, code, m, tc.want)
				}
			}
			if code, _ := f.postJSON("/api/v1/oauth/signins", mcpToken, map[string]string{"request": req, "user": "user:alice"}); code != http.StatusCreated {
				t.Fatalf("sign-in: %d", code)
			}
			if code, _ := f.postJSON("/api/v1/oauth/signins", mcpToken, map[string]string{"request": req, "user": "user:bob"}); code != http.StatusConflict {
				t.Errorf("a second sign-in on one request: %d, want 409", code)
			}

			// Consent: denied goes back as access_denied; a ticket answers once.
			_, ch := pkce()
			consentURL := f.signIn("user:alice", ch)
			loc := f.consent(consentURL, "deny")
			if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" {
				t.Errorf("denied: %s", loc)
			}
			if page, err := client.New(base, mcpToken, nil).Activity(t.Context(), client.ActivityQuery{Verb: "oauth.deny"}); err != nil ||
				len(page.Items) != 1 || page.Items[0].Actor != "user:alice" || page.Items[0].Target != "agent:oauth-"+f.client {
				t.Errorf("the denial in the ledger: %+v %v", page.Items, err)
			}
			if res, err := f.hc.Get(consentURL); err != nil || res.StatusCode != http.StatusBadRequest {
				t.Errorf("a used consent link: %v %v, want 400", res.StatusCode, err)
			}
			ticket := mustQuery(t, consentURL, "ticket")
			if res, err := f.hc.PostForm(base+"/oauth/consent", url.Values{"ticket": {ticket}, "decision": {"approve"}}); err != nil || res.StatusCode != http.StatusBadRequest {
				t.Errorf("approving with a used ticket: %v %v, want 400", res.StatusCode, err)
			}

			// The token endpoint.
			code, verifier := f.code("user:alice")
			if c, m := f.exchange(code, verifier+"x"); c != http.StatusBadRequest || m["error"] != "invalid_grant" {
				t.Errorf("PKCE mismatch: %d %v", c, m)
			}
			if c, m := f.exchange(code, verifier); c != http.StatusBadRequest || m["error"] != "invalid_grant" {
				t.Errorf("the code after a failed exchange: %d %v, want invalid_grant (one attempt per code)", c, m)
			}
			code, verifier = f.code("user:alice")
			if c, m := f.form("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {"http://127.0.0.1:7777/other"},
				"client_id": {f.client}, "code_verifier": {verifier}}); c != http.StatusBadRequest || m["error"] != "invalid_grant" {
				t.Errorf("redirect_uri mismatch: %d %v", c, m)
			}
			code, verifier = f.code("user:alice")
			if c, m := f.form("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {f.redirect},
				"client_id": {f.client}, "code_verifier": {verifier}, "resource": {"https://other.example/mcp"}}); c != http.StatusBadRequest || m["error"] != "invalid_target" {
				t.Errorf("token for another resource: %d %v", c, m)
			}
			if c, m := f.exchange(code, verifier); c != http.StatusOK { // the refusal above used nothing up
				t.Fatalf("exchange after an invalid_target: %d %v", c, m)
			}
			if c, m := f.form("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {"never-issued"}, "redirect_uri": {f.redirect},
				"client_id": {f.client}, "code_verifier": {verifier}}); c != http.StatusBadRequest || m["error"] != "invalid_grant" {
				t.Errorf("unknown code: %d %v", c, m)
			}
			code, verifier = f.code("user:alice")
			if c, m := f.form("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {f.redirect},
				"client_id": {"sbc_unknown"}, "code_verifier": {verifier}}); c != http.StatusUnauthorized || m["error"] != "invalid_client" {
				t.Errorf("unknown client at the token endpoint: %d %v", c, m)
			}
			other := newFlow(t, base)
			other.register("Another client")
			code, verifier = f.code("user:alice")
			if c, m := f.form("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {f.redirect},
				"client_id": {other.client}, "code_verifier": {verifier}}); c != http.StatusBadRequest || m["error"] != "invalid_grant" {
				t.Errorf("another client's code: %d %v", c, m)
			}

			// A replayed code is refused and revokes what the first exchange issued.
			code, verifier = f.code("user:alice")
			c, m := f.exchange(code, verifier)
			if c != http.StatusOK {
				t.Fatalf("exchange: %d %v", c, m)
			}
			access := m["access_token"].(string)
			if got, err := whoami(t, base, access); err != nil || !strings.Contains(got, "user:alice") {
				t.Fatalf("whoami: %s %v", got, err)
			}
			if c, m := f.exchange(code, verifier); c != http.StatusBadRequest || m["error"] != "invalid_grant" {
				t.Errorf("replayed code: %d %v", c, m)
			}
			if c, h := mcpStatus(t, base, access); c != http.StatusUnauthorized || !strings.Contains(h, `error="invalid_token"`) {
				t.Errorf("the token of a replayed code: %d %q, want 401 invalid_token", c, h)
			}

			// Registration.
			for _, tc := range []struct {
				name string
				body map[string]any
				want string
			}{
				{"look-alike name (digit)", map[string]any{"client_name": "Cl4ude", "redirect_uris": []string{f.redirect}}, "invalid_client_metadata"},
				{"look-alike name (Cyrillic)", map[string]any{"client_name": "Сlaude", "redirect_uris": []string{f.redirect}}, "invalid_client_metadata"},
				{"look-alike name (rn for m)", map[string]any{"client_name": "MCP lnspector", "redirect_uris": []string{f.redirect}}, "invalid_client_metadata"},
				{"no name", map[string]any{"redirect_uris": []string{f.redirect}}, "invalid_client_metadata"},
				{"javascript redirect", map[string]any{"client_name": "x", "redirect_uris": []string{"javascript:alert(1)"}}, "invalid_redirect_uri"},
				{"http redirect off loopback", map[string]any{"client_name": "x", "redirect_uris": []string{"http://evil.example/cb"}}, "invalid_redirect_uri"},
				{"fragment", map[string]any{"client_name": "x", "redirect_uris": []string{"https://a.example/cb#x"}}, "invalid_redirect_uri"},
				{"no redirect", map[string]any{"client_name": "x"}, "invalid_redirect_uri"},
				{"client credentials", map[string]any{"client_name": "x", "redirect_uris": []string{f.redirect}, "grant_types": []string{"client_credentials"}}, "invalid_client_metadata"},
			} {
				if c, m := f.postJSON("/oauth/register", "", tc.body); c != http.StatusBadRequest || m["error"] != tc.want {
					t.Errorf("register %s: %d %v, want 400 %s", tc.name, c, m, tc.want)
				}
			}
			if c, _ := f.postJSON("/oauth/register", "", map[string]any{"client_name": "Claude", "redirect_uris": []string{f.redirect}}); c != http.StatusCreated {
				t.Errorf("registering a well-known name itself: %d, want 201 (names are self-asserted; the consent page says so)", c)
			}

			// Garbage bearer tokens at /mcp.
			for _, tok := range []string{"a.b.c", "eyJhbGciOiJFUzI1NiJ9.e30.AAAA", strings.Repeat("x.", 2) + strings.Repeat("A", 20000)} {
				if c, h := mcpStatus(t, base, tok); c != http.StatusUnauthorized || !strings.Contains(h, `error="invalid_token"`) {
					t.Errorf("garbage token %.20q: %d %q", tok, c, h)
				}
			}
			// Nothing was granted to anyone but by the approvals above.
			for _, g := range listGrants(t, base, mcpToken) {
				if g["user"] != "user:alice" {
					t.Errorf("a grant for %v", g["user"])
				}
			}
		})
	}
}

func mustQuery(t *testing.T, raw, key string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Query().Get(key) == "" {
		t.Fatalf("%q has no %s", raw, key)
	}
	return u.Query().Get(key)
}

// Anyone may register a client with any https redirect URI, so an
// invalid authorization request of such a client is answered with a page,
// not a redirect: the endpoint is no open redirector (RFC 9700 §4.11.2).
// A valid request still goes on to the host's sign-in page.
func TestOAuthAuthorizeErrorsAreNoOpenRedirect(t *testing.T) {
	t.Parallel()
	base := embeddedReplicas(t, durables(t)[0], 1)[0].srv.URL
	f := newFlow(t, base)
	f.redirect = "https://evil.example/phish"
	f.register("Docs Viewer")
	_, challenge := pkce()
	for name, edit := range map[string]func(url.Values){
		"PKCE plain":     func(q url.Values) { q.Set("code_challenge_method", "plain") },
		"no PKCE":        func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") },
		"other resource": func(q url.Values) { q.Set("resource", "https://other.example/mcp") },
		"implicit grant": func(q url.Values) { q.Set("response_type", "token") },
	} {
		q := f.params(challenge)
		edit(q)
		if res := f.authorize(q); res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" {
			t.Errorf("%s: %d, Location %q; want 400 and no redirect", name, res.StatusCode, res.Header.Get("Location"))
		}
	}
	res := f.authorize(f.params(challenge))
	if res.StatusCode != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), hostLogin+"?") {
		t.Fatalf("a valid request: %d %q, want the host's sign-in page", res.StatusCode, res.Header.Get("Location"))
	}
	// Its callback, opened before anyone signed in, redirects nowhere
	// either (the request's id is in the sign-in page's URL).
	cb, err := f.hc.Get(base + "/oauth/authorize/callback?id=" + url.QueryEscape(mustQuery(t, res.Header.Get("Location"), "request")))
	if err != nil {
		t.Fatal(err)
	}
	cb.Body.Close()
	if cb.StatusCode != http.StatusBadRequest || cb.Header.Get("Location") != "" {
		t.Errorf("the callback of an unfinished request: %d, Location %q; want 400 and no redirect", cb.StatusCode, cb.Header.Get("Location"))
	}
	// The user's own Deny still goes back to the client.
	if loc := f.consent(f.signIn("user:alice", challenge), "deny"); loc.Query().Get("error") != "access_denied" {
		t.Errorf("deny: %s, want error=access_denied", loc)
	}
}

// A code_verifier shorter than RFC 7636's 43 characters (guessable by
// whoever intercepts the code) is refused, and the code stays usable.
func TestOAuthShortVerifierRefused(t *testing.T) {
	t.Parallel()
	base := embeddedReplicas(t, durables(t)[0], 1)[0].srv.URL
	f := newFlow(t, base)
	f.register("Weak PKCE")
	verifier := "a"
	sum := sha256.Sum256([]byte(verifier))
	loc := f.consent(f.signIn("user:alice", base64.RawURLEncoding.EncodeToString(sum[:])), "approve")
	if c, m := f.exchange(loc.Query().Get("code"), verifier); c != http.StatusBadRequest || m["error"] != "invalid_request" {
		t.Fatalf("a one-character verifier: %d %v, want 400 invalid_request", c, m)
	}
}
