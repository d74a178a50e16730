package redact_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/redact"
)

// RELIABILITY row 22: secrets never reach the ledger or the logs.
func TestRedact(t *testing.T) {
	t.Parallel()
	in := json.RawMessage(`{
		"title": "Ship it",
		"password": "hunter2",
		"X-Api-Key": "k-123",
		"headers": {"Authorization": "Bearer abc.def.ghi", "Cookie": "sid=123"},
		"note": "use sk-proj-ABCDEFGHIJKLMNOPQRSTUV to call, or Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
		"usage": {"inputTokens": 12, "maxTokens": 100},
		"list": ["AKIAABCDEFGHIJKLMNOP", "plain"],
		"url": "https://x.test/cb?token=s3cr3t&page=2",
		"big": 9007199254740993
	}`)
	out := string(redact.JSON(in))
	for _, secret := range []string{"hunter2", "k-123", "abc.def.ghi", "sid=123", "sk-proj-ABCDEFGHIJKLMNOPQRSTUV", "eyJhbGciOiJIUzI1NiJ9", "AKIAABCDEFGHIJKLMNOP", "s3cr3t"} {
		if strings.Contains(out, secret) {
			t.Errorf("%q survived redaction: %s", secret, out)
		}
	}
	for _, kept := range []string{`"Ship it"`, `"inputTokens":12`, `"maxTokens":100`, `"plain"`, `page=2`, `9007199254740993`} {
		if !strings.Contains(out, kept) {
			t.Errorf("%s was lost: %s", kept, out)
		}
	}
	// An id names a secret without being one (a token.create entry keeps
	// its tokenId); a token pasted under such a key is still masked, and
	// a key that only starts with "id" is still a secret.
	ids := string(redact.JSON(json.RawMessage(`{"tokenId":"3f9a0c2b7d1e4f5a","token_ids":["a1b2"],"credentialId":"c-7","leak":{"tokenId":"sbt_3f9a0c2b7d1e4f5a.Zx9_Qw8-Er7Ty6Ui5Op4As3D"},"idToken":"opaque-oidc-value"}`)))
	for _, kept := range []string{`"tokenId":"3f9a0c2b7d1e4f5a"`, `"token_ids":["a1b2"]`, `"credentialId":"c-7"`} {
		if !strings.Contains(ids, kept) {
			t.Errorf("the id %s was redacted: %s", kept, ids)
		}
	}
	for _, secret := range []string{"Zx9_Qw8-Er7Ty6Ui5Op4As3D", "opaque-oidc-value"} {
		if strings.Contains(ids, secret) {
			t.Errorf("%q survived redaction: %s", secret, ids)
		}
	}
	if got := redact.JSON(json.RawMessage(`{"a":1}`)); string(got) != `{"a":1}` {
		t.Errorf("a clean document changed: %s", got)
	}
}

func TestRedactingHandler(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(redact.Handler(slog.NewTextHandler(&buf, nil)))
	log.Info("calling with Bearer abcdefghijklmnop", "apiKey", "plain-value", "err", errString("upstream said sk-ant-ABCDEFGHIJKLMNOPQRST"), "count", 3)
	out := buf.String()
	for _, secret := range []string{"abcdefghijklmnop", "plain-value", "sk-ant-ABCDEFGHIJKLMNOPQRST"} {
		if strings.Contains(out, secret) {
			t.Errorf("%q reached the log: %s", secret, out)
		}
	}
	if !strings.Contains(out, "count=3") {
		t.Errorf("a harmless attribute was lost: %s", out)
	}
}

// Stripe-style keys are secrets wherever they appear; publishable keys
// and words that merely start alike are not.
func TestRedactStripeKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"key sk_live_4eC39HqLyjWDarjtT1zdp7dc here", "key [redacted] here"},
		{"sk_test_4eC39HqLyjWDarjtT1zdp7dc", "[redacted]"},
		{"rk_live_51HqLyjWDarjtT1zdp7dc,", "[redacted],"},
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "[redacted]"},
		{"sk-live-51HqLyjWDarjtT1zdp7dcXYZ", "[redacted]"},
		{"pk_live_4eC39HqLyjWDarjtT1zdp7dc", "pk_live_4eC39HqLyjWDarjtT1zdp7dc"},
		{"ask_live_now", "ask_live_now"},
		{"sk_live_short", "sk_live_short"},
	} {
		if got := redact.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// Values masks token-looking strings but no value for its key's name: a
// schema's property "password" keeps its {"type":"string"}.
func TestValues(t *testing.T) {
	t.Parallel()
	out := string(redact.Values(json.RawMessage(`{"properties":{"password":{"type":"string","default":"sk-proj-ABCDEFGHIJKLMNOPQRSTUV"}}}`)))
	if !strings.Contains(out, `"type":"string"`) || strings.Contains(out, "sk-proj-ABCDEFGHIJKLMNOPQRSTUV") {
		t.Errorf("got %s", out)
	}
}
