package task

import (
	"fmt"
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

// Projects are narrowed as allow globs are: a project's tools outside the
// rights are narrowed or the project dropped, each said; a bare project
// (no access said) is write within the allow globs; an envelope whose
// allow is narrowed away keeps nothing outside its projects.
func TestNarrowProjects(t *testing.T) {
	t.Parallel()
	read, write := switchboard.ProjectRead, switchboard.ProjectWrite
	env := switchboard.TaskEnvelope{Projects: []switchboard.ProjectScope{{Name: "finance", Access: read}, {Name: "design", Access: write},
		{Name: "billing", Access: write}}, Allow: []string{"hr.*"}}
	got, notes, err := Narrow(env, switchboard.TaskScope{Allow: []string{"finance.*", "design.read", "design.write"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []switchboard.ProjectScope{{Name: "finance", Access: read}, {Name: "design", Access: write, Allow: []string{"design.read", "design.write"}}}
	if fmt.Sprint(got.Projects) != fmt.Sprint(want) || strings.Join(got.Allow, ",") != "design.read,design.write,finance.*" || len(notes) != 4 {
		t.Fatalf("projects %+v allow %v notes %q", got.Projects, got.Allow, notes)
	}

	bare := switchboard.TaskEnvelope{Allow: []string{"finance.read", "design.*"}}
	names, err := projects(&bare, []string{"finance", "design", "Q3 board"})
	if err != nil || strings.Join(names, ",") != "finance,design,Q3 board" {
		t.Fatalf("names %v %v", names, err)
	}
	want = []switchboard.ProjectScope{{Name: "finance", Access: write, Allow: []string{"finance.read"}}, {Name: "design", Access: write, Allow: []string{"design.*"}}}
	if fmt.Sprint(bare.Projects) != fmt.Sprint(want) {
		t.Fatalf("bare projects %+v, want %+v", bare.Projects, want)
	}
	for _, bad := range []switchboard.TaskEnvelope{
		{Projects: []switchboard.ProjectScope{{Name: "finance", Access: "admin"}}},
		{Projects: []switchboard.ProjectScope{{Name: "finance"}, {Name: "finance", Access: read}}},
		{Projects: []switchboard.ProjectScope{{Name: "finance", Allow: []string{"Finance/*"}}}},
		{Projects: []switchboard.ProjectScope{{Name: " "}}},
	} {
		if _, err := projects(&bad, nil); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Errorf("projects %+v: %v, want INVALID_INPUT", bad.Projects, err)
		}
	}
}
