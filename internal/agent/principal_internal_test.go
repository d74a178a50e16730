package agent

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard"
)

type scopes map[string]switchboard.SessionScope

func (s scopes) Scope(_ context.Context, id string) (switchboard.SessionScope, error) {
	sc, ok := s[id]
	if !ok {
		return sc, switchboard.Errorf(switchboard.CodeNotFound, "no session %s", id)
	}
	return sc, nil
}

// Who the assistant is: a tab's run carries its session's whole scope
// (tools and panels), an admin's run none, and a session that cannot be
// read starts no run rather than one with full scope.
func TestAssistantFor(t *testing.T) {
	t.Parallel()
	narrow := switchboard.SessionScope{Allow: []string{"tasks.*"}, Deny: []string{"tasks.delete"},
		PanelScope: switchboard.PanelScope{Panels: []string{"project.*"}, Slots: []string{"sidebar"}}}
	rt := &Runtime{opts: Options{Scopes: scopes{"ses_a": narrow, "ses_open": {}}}}
	want := switchboard.Assistant()
	want.Allow, want.Deny, want.PanelScope = narrow.Allow, narrow.Deny, narrow.PanelScope
	for _, tc := range []struct {
		owner string
		want  switchboard.Principal
		code  switchboard.Code
	}{
		{"session:ses_a", want, ""},
		{"session:ses_open", switchboard.Assistant(), ""},
		{"", switchboard.Assistant(), ""},           // the admin token's run
		{"user:admin", switchboard.Assistant(), ""}, // likewise
		{"session:ses_gone", switchboard.Principal{}, switchboard.CodeNotFound},
	} {
		got, err := rt.assistantFor(context.Background(), tc.owner)
		if tc.code != "" {
			if switchboard.CodeOf(err) != tc.code {
				t.Errorf("%q: %v, want %s", tc.owner, err, tc.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.owner, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.owner, diff)
		}
	}
}
