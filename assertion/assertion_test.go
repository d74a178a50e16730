package assertion_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/assertion"
	"github.com/switchboardhq/switchboard/sqlite"
)

const issuer = "http://127.0.0.1:7766"

type clock struct{ t atomic.Pointer[time.Time] }

func (c *clock) now() time.Time          { return *c.t.Load() }
func (c *clock) advance(d time.Duration) { n := c.now().Add(d); c.t.Store(&n) }

func newSigner(t *testing.T, st assertion.Store, c *clock) *assertion.Signer {
	t.Helper()
	s, err := assertion.New(st, assertion.Options{Issuer: issuer, Rotation: time.Hour, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func setup(t *testing.T) (*sqlite.Store, *clock) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &clock{}
	start := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	c.t.Store(&start)
	return st, c
}

var forAlice = assertion.Call{
	Caller: switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", User: "user:alice"},
	Tool:   "tasks.create", Invocation: "inv_1", Audience: "https://tasks.example",
}

// The claims are the pinned ones: iss, sub the user, act.sub the agent,
// aud, jti the invocation, tool, iat and exp at most a minute later; the
// header names the key and ES256.
func TestClaims(t *testing.T) {
	t.Parallel()
	st, c := setup(t)
	s := newSigner(t, st, c)
	tok, err := s.Sign(context.Background(), forAlice)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %q", tok)
	}
	var header map[string]any
	var claims map[string]any
	decode(t, parts[0], &header)
	decode(t, parts[1], &claims)
	if header["alg"] != "ES256" || header["typ"] != "JWT" || !strings.HasPrefix(header["kid"].(string), "sbk_") {
		t.Errorf("header %v", header)
	}
	now := c.now().Unix()
	want := map[string]any{"iss": issuer, "sub": "user:alice", "act": map[string]any{"sub": "agent:planner"},
		"aud": "https://tasks.example", "jti": "inv_1", "tool": "tasks.create", "iat": float64(now), "exp": float64(now + 60)}
	if b1, b2 := mustJSON(want), mustJSON(claims); b1 != b2 {
		t.Errorf("claims\n got %s\nwant %s", b2, b1)
	}
	keys, err := s.JWKS(context.Background())
	if err != nil || len(keys.Keys) != 1 || keys.Keys[0].KeyID != header["kid"] || !keys.Keys[0].IsPublic() {
		t.Fatalf("jwks %+v %v", keys, err)
	}
	got, err := assertion.Verify(tok, keys, assertion.Expected{Issuer: issuer, Audience: "https://tasks.example", Now: c.now()})
	if err != nil || got.Subject != "user:alice" || got.Actor.Subject != "agent:planner" {
		t.Fatalf("verify: %+v %v", got, err)
	}

	// An operator's token acts for the operator; the operator calling
	// directly has no actor.
	op := s.ClaimsOf(assertion.Call{Caller: switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "ci"}}, c.now())
	if op.Subject != switchboard.Operator || op.Actor == nil || op.Actor.Subject != "agent:ci" {
		t.Errorf("operator's agent: %+v", op)
	}
	self := s.ClaimsOf(assertion.Call{Caller: switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}}, c.now())
	if self.Subject != switchboard.Operator || self.Actor != nil {
		t.Errorf("the operator itself: %+v", self)
	}
}

// Forged, expired, wrong-audience, wrong-issuer, alg none, HMAC with the
// public key and unknown kid are all refused.
func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	st, c := setup(t)
	s := newSigner(t, st, c)
	ctx := context.Background()
	tok, err := s.Sign(ctx, forAlice)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := s.JWKS(ctx)
	want := assertion.Expected{Issuer: issuer, Audience: "https://tasks.example", Now: c.now()}
	kid := keys.Keys[0].KeyID
	parts := strings.Split(tok, ".")

	// A key of the forger's own under the daemon's kid.
	forger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	fs, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: forger, KeyID: kid}}, nil)
	forged, _ := fs.Sign([]byte(b64json(t, parts[1])))
	forgedTok, _ := forged.CompactSerialize()
	// The claims changed under the daemon's signature.
	var cl map[string]any
	decode(t, parts[1], &cl)
	cl["sub"] = "user:bob"
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(mustJSON(cl))) + "." + parts[2]
	// alg none, and HS256 keyed with the public key's bytes.
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"`+kid+`"}`)) + "." + parts[1] + "."
	pub, _ := json.Marshal(keys.Keys[0])
	hsHead := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"` + kid + `"}`))
	mac := hmac.New(sha256.New, pub)
	mac.Write([]byte(hsHead + "." + parts[1]))
	hs := hsHead + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))

	late := want
	late.Now = c.now().Add(2 * time.Minute)
	otherAud, otherIss := want, want
	otherAud.Audience, otherIss.Issuer = "https://other.example", "http://evil.example"
	for name, tc := range map[string]struct {
		tok  string
		want assertion.Expected
		keys jose.JSONWebKeySet
	}{
		"forged":         {forgedTok, want, keys},
		"tampered":       {tampered, want, keys},
		"alg none":       {none, want, keys},
		"hmac":           {hs, want, keys},
		"expired":        {tok, late, keys},
		"wrong audience": {tok, otherAud, keys},
		"wrong issuer":   {tok, otherIss, keys},
		"unknown kid":    {tok, want, jose.JSONWebKeySet{}},
		"malformed":      {"a.b", want, keys},
		"oversized":      {strings.Repeat("a", assertion.MaxTokenBytes+1), want, keys},
		"missing":        {"", want, keys},
	} {
		if _, err := assertion.Verify(tc.tok, tc.keys, tc.want); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Keys rotate after Rotation; the old key stays published until what it
// signed has expired; two replicas over one store sign with one key set.
func TestRotation(t *testing.T) {
	t.Parallel()
	st, c := setup(t)
	a, b := newSigner(t, st, c), newSigner(t, st, c)
	ctx := context.Background()
	kid := func(s *assertion.Signer) string {
		t.Helper()
		tok, err := s.Sign(ctx, forAlice)
		if err != nil {
			t.Fatal(err)
		}
		var h map[string]any
		decode(t, strings.Split(tok, ".")[0], &h)
		return h["kid"].(string)
	}
	first := kid(a)
	if got := kid(b); got != first {
		t.Fatalf("the second replica signs with %s, the first with %s", got, first)
	}
	c.advance(59 * time.Minute)
	if got := kid(a); got != first {
		t.Fatalf("rotated early: %s", got)
	}
	c.advance(time.Minute) // Rotation reached
	second := kid(a)
	if second == first {
		t.Fatal("no rotation after Rotation")
	}
	if got := kid(b); got != second {
		t.Fatalf("the other replica did not pick up the new key: %s, want %s", got, second)
	}
	published := func() []string {
		set, err := b.JWKS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, k := range set.Keys {
			ids = append(ids, k.KeyID)
		}
		return ids
	}
	if ids := published(); len(ids) != 2 || ids[0] != second || ids[1] != first {
		t.Fatalf("after rotation the JWKS holds %v, want [%s %s]", ids, second, first)
	}
	c.advance(2*time.Minute + time.Second) // past the old key's last expiry and skew
	if ids := published(); len(ids) != 1 || ids[0] != second {
		t.Fatalf("a retired key is still published: %v", ids)
	}

	// The HTTP route serves the same set, as public keys only.
	w := httptest.NewRecorder()
	b.ServeHTTP(w, httptest.NewRequest("GET", "/.well-known/jwks.json", nil))
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, second) || strings.Contains(body, `"d"`) ||
		w.Header().Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("GET jwks: %d %s %s", w.Code, w.Header(), body)
	}
}

func decode(t *testing.T, part string, v any) {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func b64json(t *testing.T, part string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
