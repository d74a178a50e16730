package session

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func TestCreateAndAuthenticate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c := f.open()
	if !strings.HasPrefix(c.SessionToken, c.SessionID+".") || len(c.SessionToken) < len(c.SessionID)+40 {
		t.Fatalf("token %q should be the session id and 256 random bits", c.SessionToken)
	}
	stored, err := f.store.SessionGet(f.ctx, c.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.TokenHash == c.SessionToken || stored.TokenHash != hashToken(c.SessionToken) || stored.Principal != "user:alice" {
		t.Fatalf("stored %+v: want the token's hash, never the token", stored)
	}
	if id, err := f.m.Authenticate(f.ctx, c.SessionToken); err != nil || id != c.SessionID {
		t.Fatalf("authenticate: %q %v", id, err)
	}
	other := f.open()
	for _, bad := range []string{"", "nonsense", c.SessionID + ".wrong", other.SessionID + strings.TrimPrefix(c.SessionToken, c.SessionID), "ses_unknown.x"} {
		_, err := f.m.Authenticate(f.ctx, bad)
		wantCode(t, err, switchboard.CodeUnauthorized)
	}
	if err := f.m.Close(f.ctx, c.SessionID); err != nil {
		t.Fatal(err)
	}
	_, err = f.m.Authenticate(f.ctx, c.SessionToken)
	wantCode(t, err, switchboard.CodeSessionGone)
	_, err = f.m.Attach(f.ctx, c.SessionID, "")
	wantCode(t, err, switchboard.CodeSessionGone)
}

func TestAdvertiseValidates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c, _ := f.live(navTool())

	mutate := navTool()
	mutate.Name, mutate.Class = "ui.delete_all", switchboard.ClassMutate
	job := navTool()
	job.Name, job.Class = "ui.export", switchboard.ClassJob
	noClaim := navTool()
	noClaim.Name, noClaim.ViewStateOnly = "ui.focus", false
	api := navTool()
	api.Name, api.Surface = "ui.select", switchboard.SurfaceAPI
	badName := navTool()
	badName.Name = "Nav"
	for _, tc := range []struct {
		name string
		tool switchboard.Tool
		code switchboard.Code
	}{
		{"mutate class", mutate, switchboard.CodeExemptionViolation},
		{"job class", job, switchboard.CodeExemptionViolation},
		{"no viewStateOnly", noClaim, switchboard.CodeExemptionViolation},
		{"api surface", api, switchboard.CodeInvalidInput},
		{"bad name", badName, switchboard.CodeInvalidInput},
	} {
		// All or nothing: a good tool beside a bad one is not advertised.
		_, err := f.m.Advertise(f.ctx, c.SessionID, []switchboard.Tool{scrollTool(), tc.tool})
		if switchboard.CodeOf(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	tools, err := f.m.Tools(f.ctx, c.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Name != "nav.goto" {
		t.Fatalf("after refused advertisements the tab still has %v, want only nav.goto", names(tools))
	}
	got := tools[0]
	if got.Surface != switchboard.SurfaceBrowser || got.Origin == nil || got.Origin.Source != switchboard.SourceSession || got.Origin.SessionID != c.SessionID {
		t.Fatalf("advertised tool %+v: want surface browser and origin session %s", got, c.SessionID)
	}

	f.advertise(c.SessionID) // an empty list withdraws everything
	if tools, _ := f.m.Tools(f.ctx, c.SessionID); len(tools) != 0 {
		t.Fatalf("after withdrawing: %v", names(tools))
	}
	_, err = f.m.Resolve(f.ctx, "nav.goto", "", "", nil)
	wantCode(t, err, switchboard.CodeToolUnavailable)
}

func TestToolsOfUnknownAndClosedSessions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	_, err := f.m.Tools(f.ctx, "ses_nope")
	wantCode(t, err, switchboard.CodeNotFound)
	c := f.open()
	if tools, err := f.m.Tools(f.ctx, c.SessionID); err != nil || len(tools) != 0 {
		t.Fatalf("not yet connected: %v %v", tools, err)
	}
	f.advertise(c.SessionID, navTool()) // before its stream: kept, but not live
	if tools, _ := f.m.Tools(f.ctx, c.SessionID); len(tools) != 0 {
		t.Fatalf("a tab without a stream lists %v", names(tools))
	}
	f.attach(c.SessionID, "")
	if tools, _ := f.m.Tools(f.ctx, c.SessionID); len(tools) != 1 {
		t.Fatalf("connected: %v", names(tools))
	}
	_ = f.m.Close(f.ctx, c.SessionID)
	_, err = f.m.Tools(f.ctx, c.SessionID)
	wantCode(t, err, switchboard.CodeSessionGone)
}

// A tool the caller may not see is, in every tab, one that is not
// advertised: two tabs with it are not "live in 2 tabs", and the tab tool
// list in an error leaves it out.
func TestResolveHidesWhatTheCallerMayNotSee(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a, _ := f.live(navTool(), scrollTool())
	f.live(navTool())
	hideNav := func(t switchboard.Tool) bool { return t.Name != "nav.goto" }

	_, err := f.m.Resolve(f.ctx, "nav.goto", "", "", hideNav)
	wantCode(t, err, switchboard.CodeToolUnavailable)
	_, err = f.m.Resolve(f.ctx, "nav.goto", a.SessionID, "", hideNav)
	wantCode(t, err, switchboard.CodeToolUnavailable)
	b, _ := json.Marshal(switchboard.AsError(err))
	if strings.Contains(string(b), "nav.goto\"") || strings.Contains(switchboard.AsError(err).Message, "it has: nav.goto") {
		t.Fatalf("the error names the hidden tool: %s", b)
	}
	if !strings.Contains(string(b), "ui.scroll_to") {
		t.Fatalf("the error should still list what the caller may see: %s", b)
	}
	if _, err := f.m.Resolve(f.ctx, "ui.scroll_to", "", "", hideNav); err != nil {
		t.Fatalf("a visible tool resolves: %v", err)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	_, err := f.m.Resolve(f.ctx, "nav.goto", "", "", nil)
	wantCode(t, err, switchboard.CodeToolUnavailable)

	a, _ := f.live(navTool(), scrollTool())
	tg, err := f.m.Resolve(f.ctx, "nav.goto", "", "run-1", nil)
	if err != nil || tg.SessionID != a.SessionID || tg.Input == nil || tg.Output != nil {
		t.Fatalf("the only live tab: %+v %v", tg, err)
	}
	if tg, _ := f.m.Resolve(f.ctx, "ui.scroll_to", "", "", nil); tg.Output == nil {
		t.Fatal("a declared outputSchema should come compiled")
	}

	b, _ := f.live(navTool())
	_, err = f.m.Resolve(f.ctx, "nav.goto", "", "", nil)
	wantCode(t, err, switchboard.CodeInvalidInput)
	var details map[string]any
	b2, _ := json.Marshal(switchboard.AsError(err).Details)
	_ = json.Unmarshal(b2, &details)
	cands, _ := details["candidates"].([]any)
	if len(cands) != 2 {
		t.Fatalf("ambiguous resolve should name both candidates: %v", err)
	}
	// The run that went to a first stays with a.
	if tg, err := f.m.Resolve(f.ctx, "nav.goto", "", "run-1", nil); err != nil || tg.SessionID != a.SessionID {
		t.Fatalf("run-bound resolve: %+v %v", tg, err)
	}
	// Explicit wins, and binds the run.
	if tg, err := f.m.Resolve(f.ctx, "nav.goto", b.SessionID, "run-2", nil); err != nil || tg.SessionID != b.SessionID {
		t.Fatalf("explicit resolve: %+v %v", tg, err)
	}
	if tg, _ := f.m.Resolve(f.ctx, "nav.goto", "", "run-2", nil); tg.SessionID != b.SessionID {
		t.Fatalf("run-2 should be bound to b, got %s", tg.SessionID)
	}
	_, err = f.m.Resolve(f.ctx, "ui.scroll_to", b.SessionID, "", nil)
	wantCode(t, err, switchboard.CodeToolUnavailable)
	_, err = f.m.Resolve(f.ctx, "nav.goto", "ses_nope", "", nil)
	wantCode(t, err, switchboard.CodeNotFound)

	idle := f.open() // exists, never connected
	_, err = f.m.Resolve(f.ctx, "nav.goto", idle.SessionID, "", nil)
	wantCode(t, err, switchboard.CodeSessionGone)

	_ = f.m.Close(f.ctx, b.SessionID)
	_, err = f.m.Resolve(f.ctx, "nav.goto", b.SessionID, "", nil)
	wantCode(t, err, switchboard.CodeSessionGone)
	// With b closed, run-2's binding is gone and a is the only candidate.
	if tg, err := f.m.Resolve(f.ctx, "nav.goto", "", "run-2", nil); err != nil || tg.SessionID != a.SessionID {
		t.Fatalf("after b closed: %+v %v", tg, err)
	}
}

func names(ts []switchboard.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	slices.Sort(out)
	return out
}

// Tabs advertising the same declarations share one compiled copy, which
// goes away with the last tab that holds it.
func TestAdvertisedToolsAreShared(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a, _ := f.live(navTool(), scrollTool())
	b, _ := f.live(navTool())
	shared := func() (n int, refs int) {
		f.m.mu.Lock()
		defer f.m.mu.Unlock()
		for _, lt := range f.m.shared {
			n++
			refs += lt.refs
		}
		return n, refs
	}
	if n, refs := shared(); n != 2 || refs != 3 {
		t.Fatalf("shared entries %d with %d refs, want 2 with 3", n, refs)
	}
	ta, _ := f.m.Resolve(f.ctx, "nav.goto", a.SessionID, "", nil)
	tb, _ := f.m.Resolve(f.ctx, "nav.goto", b.SessionID, "", nil)
	if ta.Input != tb.Input || ta.Tool.Origin.SessionID != a.SessionID || tb.Tool.Origin.SessionID != b.SessionID {
		t.Fatal("both tabs should use one compiled schema, each with its own origin")
	}
	f.advertise(a.SessionID, scrollTool()) // drops a's nav.goto
	if n, refs := shared(); n != 2 || refs != 2 {
		t.Fatalf("after re-advertising: %d entries, %d refs", n, refs)
	}
	_ = f.m.Close(f.ctx, a.SessionID)
	_ = f.m.Close(f.ctx, b.SessionID)
	if n, _ := shared(); n != 0 {
		t.Fatalf("%d shared entries left after every tab closed", n)
	}
}
