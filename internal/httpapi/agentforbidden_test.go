package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// TestAssistantRoutesForbidAgentTokens: a valid agent token on the
// in-app assistant's routes is FORBIDDEN (the token is good, the route is
// not an agent's), as on the admin routes; a made-up token stays
// UNAUTHORIZED.
func TestAssistantRoutesForbidAgentTokens(t *testing.T) {
	e := newAssistantOpts(t, false, false, nil)
	opts := e.opts
	opts.Governance = &httpapi.Governance{Tokens: scope.NewTokens(e.store, nil)}
	h, err := httpapi.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tok, err := client.New(srv.URL, token, nil).CreateToken(context.Background(), client.TokenRequest{Agent: "planner"})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv // post sends to this server
	for _, r := range [][2]string{{"POST", "/api/v1/agui"}, {"POST", "/api/v1/agent/chat"}, {"GET", "/api/v1/agent/capabilities?session=c1"}} {
		resp := e.post(t, r[0], r[1], tok.Token, `{}`)
		if body := decodeJSON(t, resp); resp.StatusCode != http.StatusForbidden || code(body) != "FORBIDDEN" {
			t.Errorf("%s %s with an agent token: %d %v, want 403 FORBIDDEN", r[0], r[1], resp.StatusCode, body)
		}
		resp = e.post(t, r[0], r[1], "sb_not_a_token", `{}`)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s with a made-up token: %d, want 401", r[0], r[1], resp.StatusCode)
		}
	}
}
