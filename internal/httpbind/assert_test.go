package httpbind_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/httpbind"
)

// Every request carries the assertion signed for its call, meant for the
// binding's audience (by default its URL's origin); a binding header of
// that name never reaches the backend, nor does the caller's bearer.
func TestAssertionHeader(t *testing.T) {
	t.Parallel()
	srv, got := backend(t, 200, "application/json", `{}`)
	var signed []httpbind.Call
	c := httpbind.New(&httpbind.Options{Assert: func(_ context.Context, call httpbind.Call) (string, error) {
		signed = append(signed, call)
		return "signed." + call.Audience + "." + call.Caller.ActsFor(), nil
	}})
	t.Cleanup(c.Close)
	alice := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner", User: "user:alice"}
	ctx := httpbind.WithCall(switchboard.WithPrincipal(context.Background(), alice),
		httpbind.Call{Caller: alice, Tool: "tasks.create", Invocation: "inv_1"})
	for _, tc := range []struct{ audience, want string }{
		{"", srv.URL},
		{"https://tasks.example", "https://tasks.example"},
	} {
		b := &switchboard.HTTPBinding{Method: "POST", URL: srv.URL + "/x", Audience: tc.audience,
			Headers: map[string]switchboard.HeaderValue{"Switchboard-Assertion": {Value: "forged"}}}
		if _, err := c.Call(ctx, b, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		s := <-got
		if h := s.header.Values(httpbind.AssertionHeader); len(h) != 1 || h[0] != "signed."+tc.want+".user:alice" {
			t.Errorf("audience %q: header %q", tc.audience, h)
		}
		if s.header.Get("Authorization") != "" {
			t.Errorf("a bearer reached the backend: %v", s.header)
		}
	}
	if len(signed) != 2 || signed[0].Tool != "tasks.create" || signed[0].Invocation != "inv_1" || signed[0].Caller.String() != "agent:planner" {
		t.Fatalf("signed %+v", signed)
	}
	// A signer that fails stops the call before it is sent.
	failing := httpbind.New(&httpbind.Options{Assert: func(context.Context, httpbind.Call) (string, error) {
		return "", http.ErrServerClosed
	}})
	t.Cleanup(failing.Close)
	if _, err := failing.Call(ctx, &switchboard.HTTPBinding{Method: "GET", URL: srv.URL}, []byte(`{}`)); switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("failing signer: %v", err)
	}
}
