package switchboard_test

import (
	"testing"

	"github.com/switchboardhq/switchboard"
)

func TestPrincipalActsFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    switchboard.Principal
		want string
	}{
		{switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "alice"}, "user:alice"},
		{switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}, "user:admin"},
		{switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot"}, "user:admin"},
		{switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot", User: "user:alice"}, "user:alice"},
		{switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot", User: "bob"}, "user:bob"},
		{switchboard.Principal{Kind: switchboard.PrincipalSession, ID: "ses_1", User: "user:carol"}, "user:carol"},
	} {
		if got := tc.p.ActsFor(); got != tc.want {
			t.Errorf("%v.ActsFor() = %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestPrincipalKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    switchboard.Principal
		want string
	}{
		{switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "alice"}, "user:alice"},
		{switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot"}, "agent:bot"},
		{switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot", User: "user:admin"}, "agent:bot"},
		{switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bot", User: "alice"}, "agent:bot for user:alice"},
		{switchboard.Principal{Kind: switchboard.PrincipalSession, ID: "ses_1", User: "user:bob"}, "session:ses_1 for user:bob"},
	} {
		if got := tc.p.Key(); got != tc.want {
			t.Errorf("%v.Key() = %q, want %q", tc.p, got, tc.want)
		}
	}
}
