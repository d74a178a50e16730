package task

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// Narrow never widens: an allow glob outside the rights is narrowed to the
// rights' globs it covers or dropped, rights' denies are added, and an
// envelope left with nothing is FORBIDDEN.
func TestNarrow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name              string
		allow, deny       []string
		rights, rightDeny []string
		want, wantDeny    string
		notes             int
		code              switchboard.Code
	}{
		{name: "unscoped owner", allow: []string{"*"}, want: "*"},
		{name: "within", allow: []string{"finance.read"}, rights: []string{"finance.*"}, want: "finance.read"},
		{name: "equal", allow: []string{"finance.*"}, rights: []string{"finance.*"}, want: "finance.*"},
		{name: "wider", allow: []string{"*"}, rights: []string{"finance.*", "design.*"}, want: "design.*,finance.*", notes: 1},
		{name: "outside", allow: []string{"finance.*", "billing.*"}, rights: []string{"finance.*"}, want: "finance.*", notes: 1},
		{name: "none asked", rights: []string{"finance.*"}, want: "finance.*", notes: 1},
		{name: "denies added", allow: []string{"finance.*"}, rights: []string{"finance.*"}, rightDeny: []string{"finance.delete"},
			want: "finance.*", wantDeny: "finance.delete", notes: 1},
		{name: "nothing left", allow: []string{"billing.*"}, rights: []string{"finance.*"}, code: switchboard.CodeForbidden},
	} {
		env, notes, err := Narrow(switchboard.TaskEnvelope{Allow: c.allow, Deny: c.deny}, switchboard.TaskScope{Allow: c.rights, Deny: c.rightDeny})
		if c.code != "" {
			if switchboard.CodeOf(err) != c.code {
				t.Errorf("%s: %v, want %s", c.name, err, c.code)
			}
			continue
		}
		if err != nil || strings.Join(env.Allow, ",") != c.want || strings.Join(env.Deny, ",") != c.wantDeny || len(notes) != c.notes {
			t.Errorf("%s: allow %v deny %v notes %q err %v; want allow %s deny %s and %d notes", c.name, env.Allow, env.Deny, notes, err, c.want, c.wantDeny, c.notes)
		}
	}
}
