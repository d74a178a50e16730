package oauthas

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// refuse answers the innermost description in the chain (the storage's
// reason, which the op wraps in a bare error of its own), falls back when
// there is none, and turns a failure of the server's own, which the op
// wraps in invalid_grant, into a server_error that leaks no cause.
func TestRefuse(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
		says   string
	}{
		{"the storage's reason", oidc.ErrInvalidGrant().WithParent(oidc.ErrInvalidGrant().WithDescription("the grant sbg_1 was revoked")), 400, "invalid_grant", "the grant sbg_1 was revoked"},
		{"the op's own", oidc.ErrInvalidGrant().WithDescription("invalid code_verifier"), 400, "invalid_grant", "invalid code_verifier"},
		{"no description", oidc.ErrInvalidGrant(), 400, "invalid_grant", "the fallback"},
		{"an unknown client", oidc.ErrInvalidClient().WithParent(errUnknownClient), 401, "invalid_client", "unknown client_id"},
		{"a store failure under invalid_grant", oidc.ErrInvalidGrant().WithParent(oidc.ErrServerError().WithParent(errors.New("db down"))), 500, "server_error", "retry"},
		{"a plain error", errors.New("db down"), 500, "server_error", "retry"},
	} {
		rec := httptest.NewRecorder()
		s.refuse(rec, httptest.NewRequest(http.MethodPost, TokenPath, strings.NewReader("")), tc.err, "the fallback")
		var m map[string]string
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		if rec.Code != tc.status || m["error"] != tc.code || !strings.Contains(m["error_description"], tc.says) || strings.Contains(rec.Body.String(), "db down") {
			t.Errorf("%s: %d %s, want %d %s saying %q", tc.name, rec.Code, rec.Body, tc.status, tc.code, tc.says)
		}
	}
}
