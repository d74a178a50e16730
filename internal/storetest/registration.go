package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
)

// testPanelRegistration: a batch lands whole or not at all, a put replaces
// by (kind, name), a delete of nothing is NOT_FOUND, and the list is
// ordered by kind then name.
func testPanelRegistration(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	reg := func(kind, name, def string) switchboard.PanelRegistration {
		return switchboard.PanelRegistration{Kind: kind, Name: name, Definition: json.RawMessage(def)}
	}
	list := func() []switchboard.PanelRegistration {
		t.Helper()
		l, err := s.PanelRegistrationList(ctx)
		must(t, err)
		return l
	}
	if l := list(); len(l) != 0 {
		t.Fatalf("a new store lists %d registrations", len(l))
	}
	must(t, s.PanelRegistrationPut(ctx, []switchboard.PanelRegistration{
		reg("panel", "project.settings", `{"id":"project.settings","v":1}`),
		reg("adapter", "projects", `{"name":"projects"}`),
		reg("panel", "billing", `{"id":"billing"}`),
	}, base))
	must(t, s.PanelRegistrationPut(ctx, []switchboard.PanelRegistration{reg("panel", "project.settings", `{"id":"project.settings","v":2}`)}, base.Add(time.Second)))
	l := list()
	var got []string
	for _, r := range l {
		got = append(got, r.Kind+"/"+r.Name)
	}
	if want := "[adapter/projects panel/billing panel/project.settings]"; fmtList(got) != want {
		t.Fatalf("list = %v, want %s", got, want)
	}
	var v struct{ V int }
	if err := json.Unmarshal(l[2].Definition, &v); err != nil || v.V != 2 || !l[2].UpdatedAt.Equal(base.Add(time.Second).Truncate(time.Microsecond)) {
		t.Fatalf("replaced registration = %s at %v (%v), want v 2 at %v", l[2].Definition, l[2].UpdatedAt, err, base.Add(time.Second))
	}
	// One bad entry refuses the whole batch.
	for _, bad := range []switchboard.PanelRegistration{
		reg("widget", "x", `{}`), reg("panel", "", `{}`), reg("panel", "y", `[1]`), reg("panel", "y", `{oops`),
	} {
		err := s.PanelRegistrationPut(ctx, []switchboard.PanelRegistration{reg("panel", "fresh", `{}`), bad}, base)
		wantCode(t, err, switchboard.CodeInvalidInput)
	}
	if l := list(); len(l) != 3 {
		t.Fatalf("refused batches left %d registrations, want 3", len(l))
	}
	must(t, s.PanelRegistrationDelete(ctx, "panel", "billing"))
	wantCode(t, s.PanelRegistrationDelete(ctx, "panel", "billing"), switchboard.CodeNotFound)
	wantCode(t, s.PanelRegistrationDelete(ctx, "panel", "projects"), switchboard.CodeNotFound) // the adapter's name, not a panel's
	if l := list(); len(l) != 2 {
		t.Fatalf("after a delete %d registrations, want 2", len(l))
	}
}

func fmtList(l []string) string { return "[" + strings.Join(l, " ") + "]" }
