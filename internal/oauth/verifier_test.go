package oauth_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/oauth"
	"github.com/switchboardhq/switchboard/internal/oidctest"
)

const resource = "https://app.example.com/mcp"

func newVerifier(t testing.TB, issuer string, now func() time.Time) *oauth.Verifier {
	t.Helper()
	v, err := oauth.NewVerifier(t.Context(), oauth.VerifierOptions{Issuer: issuer, Resource: resource, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A token the real provider issues through the authorization-code flow
// is accepted: its client becomes the agent, its subject the user the
// agent acts for, its scopes the agent's tool scope.
func TestVerifierAcceptsProviderToken(t *testing.T) {
	t.Parallel()
	op := oidctest.Start(t, resource)
	v := newVerifier(t, op.Issuer, nil)
	tok, err := v.Verify(t.Context(), op.Token(t, "alice", "mcp", "tools:tasks.*"))
	if err != nil {
		t.Fatal(err)
	}
	p := tok.Principal
	if p.String() != "agent:oauth-"+oidctest.ClientID || p.ActsFor() != "user:alice" || !slices.Equal(p.Allow, []string{"tasks.*"}) {
		t.Fatalf("principal %+v acting for %s", p, p.ActsFor())
	}
	if !slices.Contains(tok.Scopes, "mcp") || tok.ClientID != oidctest.ClientID {
		t.Fatalf("token %+v", tok)
	}
}

// Every forged or misused token is UNAUTHORIZED,
// which /mcp answers as error="invalid_token".
func TestVerifierRefuses(t *testing.T) {
	t.Parallel()
	op := oidctest.Start(t, resource)
	good := op.Token(t, "alice", "mcp")
	header, payload := parts(t, good)

	// The provider's own public key, which an attacker can read.
	res, err := http.Get(op.Issuer + "/keys")
	if err != nil {
		t.Fatal(err)
	}
	var jwks jose.JSONWebKeySet
	err = json.NewDecoder(res.Body).Decode(&jwks)
	res.Body.Close()
	if err != nil || len(jwks.Keys) == 0 {
		t.Fatalf("provider JWKS: %v %+v", err, jwks)
	}
	pub, err := x509.MarshalPKIXPublicKey(jwks.Keys[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}

	wrongAud := oidctest.Start(t, "https://elsewhere.example.com/mcp")
	otherIssuer := oidctest.Start(t, resource) // right audience, another issuer and key

	v := newVerifier(t, op.Issuer, nil)
	later := newVerifier(t, op.Issuer, func() time.Time { return time.Now().Add(24 * time.Hour) })
	for _, tc := range []struct {
		name  string
		token string
		v     *oauth.Verifier
		why   string
	}{
		{"expired", good, later, "expired"},
		{"wrong audience", wrongAud.Token(t, "alice", "mcp"), newVerifier(t, wrongAud.Issuer, nil), "audience"},
		{"wrong issuer", otherIssuer.Token(t, "alice", "mcp"), v, ""},
		{"alg none", b64(`{"alg":"none","typ":"JWT"}`) + "." + payload + ".", v, ""},
		{"HMAC with the public key", sign(t, jose.HS256, pub, jwks.Keys[0].KeyID, payload), v, ""},
		{"unknown kid", sign(t, jose.RS256, other, "rotated-away", payload), v, ""},
		{"known kid, wrong key", sign(t, jose.RS256, other, jwks.Keys[0].KeyID, payload), v, ""},
		{"payload swapped", header + "." + b64(`{"iss":"`+op.Issuer+`","sub":"bob","aud":"`+resource+`","exp":9999999999,"client_id":"x","scope":"mcp"}`) + "." + strings.Split(good, ".")[2], v, ""},
		{"malformed", "a.b.c", v, ""},
		{"not a JWT", "opaque-token", v, "not a signed JWT"},
		{"oversized", good + strings.Repeat("A", oauth.MaxTokenBytes), v, "limit"},
		{"user named like the operator", op.Token(t, "admin", "mcp"), v, "not the operator"},
	} {
		_, err := tc.v.Verify(t.Context(), tc.token)
		if switchboard.CodeOf(err) != switchboard.CodeUnauthorized || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v, want UNAUTHORIZED mentioning %q", tc.name, err, tc.why)
		}
	}
	if _, err := v.Verify(t.Context(), good); err != nil { // the refusals broke nothing
		t.Fatal(err)
	}
}

func parts(t testing.TB, tok string) (header, payload string) {
	t.Helper()
	p := strings.Split(tok, ".")
	if len(p) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	return p[0], p[1]
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// sign signs the (base64url) payload with key under alg, naming kid.
func sign(t testing.TB, alg jose.SignatureAlgorithm, key any, kid, payload string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzVerify: whatever the bearer, Verify neither panics nor accepts
// anything but what the provider signed for alice (the seeds include it).
func FuzzVerify(f *testing.F) {
	op := oidctest.Start(f, resource)
	good := op.Token(f, "alice", "mcp")
	v, err := oauth.NewVerifier(f.Context(), oauth.VerifierOptions{Issuer: op.Issuer, Resource: resource})
	if err != nil {
		f.Fatal(err)
	}
	h, p := parts(f, good)
	for _, s := range []string{good, "", ".", "..", "a.b.c", h + "." + p + ".", b64(`{"alg":"none"}`) + "." + p + ".", good + "x", strings.Repeat(".", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		tok, err := v.Verify(t.Context(), raw)
		if err == nil && (tok.ClientID != oidctest.ClientID || tok.Principal.ActsFor() != "user:alice") {
			t.Fatalf("accepted %q as %+v", raw, tok.Principal)
		}
	})
}
