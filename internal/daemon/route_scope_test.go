package daemon_test

import (
	"net/http"
	"testing"
)

// TestSessionTokenOnAdminRoutes (security review F3): a tab's valid
// session token on a route for the admin (or an agent) is FORBIDDEN with
// the reason, as an agent token is; a token the daemon does not know
// stays UNAUTHORIZED.
func TestSessionTokenOnAdminRoutes(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	tab := e.openSession(t, "alice")
	for _, p := range []string{"/api/v1/invocations", "/api/v1/jobs", "/api/v1/runs", "/api/v1/canvas", "/api/v1/activity/checkpoint", "/api/v1/approvals/events"} {
		if code, c := e.do(t, "GET", p, tab.SessionToken, nil, nil); code != http.StatusForbidden || c != "FORBIDDEN" {
			t.Errorf("GET %s with a session token: %d %s", p, code, c)
		}
		if code, c := e.do(t, "GET", p, tab.SessionToken+"x", nil, nil); code != http.StatusUnauthorized || c != "UNAUTHORIZED" {
			t.Errorf("GET %s with an unknown session token: %d %s", p, code, c)
		}
	}
}
