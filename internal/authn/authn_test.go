package authn_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/authn"
)

type agents map[string]switchboard.Principal

func (a agents) Authenticate(_ context.Context, tok string) (switchboard.Principal, error) {
	if p, ok := a[tok]; ok {
		return p, nil
	}
	return switchboard.Principal{}, switchboard.Errorf(switchboard.CodeUnauthorized, "this agent token was revoked")
}

type sessions map[string]string

func (s sessions) Authenticate(_ context.Context, tok string) (string, error) {
	if id, ok := s[tok]; ok {
		return id, nil
	}
	return "", switchboard.Errorf(switchboard.CodeSessionGone, "session closed")
}

func TestToken(t *testing.T) {
	t.Parallel()
	bot := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot", Allow: []string{"tasks.*"}}
	a, err := authn.New(authn.Options{
		AdminToken: "admin-secret",
		Agents:     agents{"sbt_1.x": bot},
		Sessions:   sessions{"ses_1.y": "ses_1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		header string
		kind   authn.Kind
		who    string
		code   switchboard.Code
	}{
		{"Bearer admin-secret", authn.Admin, "user:admin", ""},
		{"bearer admin-secret ", authn.Admin, "user:admin", ""},
		{"Bearer admin-secre", "", "", switchboard.CodeUnauthorized},
		{"Bearer sbt_1.x", authn.Agent, "agent:bot", ""},
		{"Bearer sbt_2.x", authn.Agent, "", switchboard.CodeUnauthorized}, // the check's own error, kind kept
		{"Bearer ses_1.y", authn.Session, "session:ses_1", ""},
		{"Bearer ses_2.y", authn.Session, "", switchboard.CodeSessionGone},
		{"Bearer nonsense", "", "", switchboard.CodeUnauthorized},
		{"", "", "", switchboard.CodeUnauthorized},
		{"Basic admin-secret", "", "", switchboard.CodeUnauthorized},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		c, err := a.Authenticate(r)
		if switchboard.CodeOf(err) != tc.code && !(err == nil && tc.code == "") {
			t.Errorf("%q: error %v, want code %q", tc.header, err, tc.code)
		}
		who := ""
		if c.Principal.Kind != "" {
			who = c.Principal.String()
		}
		if c.Kind != tc.kind || who != tc.who {
			t.Errorf("%q: %s %q, want %s %q", tc.header, c.Kind, who, tc.kind, tc.who)
		}
		if tc.kind == authn.Agent && err == nil && len(c.Principal.Allow) != 1 {
			t.Errorf("%q: the agent's scope was lost: %+v", tc.header, c.Principal)
		}
	}
}

// Without agent tokens or sessions configured, their forms are just
// invalid tokens.
func TestTokenKindsNotConfigured(t *testing.T) {
	t.Parallel()
	a, err := authn.New(authn.Options{AdminToken: "admin-secret"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"sbt_1.x", "ses_1.y"} {
		c, err := a.Token(t.Context(), tok)
		if switchboard.CodeOf(err) != switchboard.CodeUnauthorized || c.Kind != "" {
			t.Errorf("%s: %+v %v", tok, c, err)
		}
	}
	if _, err := authn.New(authn.Options{}); err == nil {
		t.Error("an authenticator without an admin token")
	}
}
