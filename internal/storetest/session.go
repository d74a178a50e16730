package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

// testSessionTab: a tab's advertisement, workspace report and stream
// holder round-trip with its session; a closed session takes neither an
// advertisement nor a report; a detach by a replica the stream moved away
// from changes nothing.
func testSessionTab(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	nav := switchboard.Tool{Name: "nav.goto", Description: "Open a page.", Surface: switchboard.SurfaceBrowser,
		Class: switchboard.ClassUI, ViewStateOnly: true, InputSchema: json.RawMessage(`{"type":"object"}`)}
	wantCode(t, s.SessionAdvertise(ctx, "nope", []switchboard.Tool{nav}, base), switchboard.CodeNotFound)
	wantCode(t, s.SessionReport(ctx, "nope", switchboard.TabReport{}, base), switchboard.CodeNotFound)
	wantCode(t, s.SessionStream(ctx, "nope", "r1", true, base), switchboard.CodeNotFound)

	sess := switchboard.Session{ID: "tab-1", TokenHash: "h", Principal: "alice", CreatedAt: base}
	must(t, s.SessionCreate(ctx, sess))
	got, err := s.SessionGet(ctx, sess.ID)
	must(t, err)
	if got.Tools != nil || got.Stream != "" || !got.StreamAt.IsZero() || !got.SeenAt.IsZero() || len(got.Report.Contexts) != 0 {
		t.Fatalf("a new session has tab state: %+v", got)
	}

	must(t, s.SessionAdvertise(ctx, sess.ID, []switchboard.Tool{nav}, base.Add(time.Second)))
	report := switchboard.TabReport{Contexts: []switchboard.WorkspaceContext{{ID: "doc-1", Kind: "document", Label: "Q3 plan",
		Attention: switchboard.AttentionFocused, Panels: []switchboard.WorkspacePanel{{ID: "p1", Type: "editor", Origin: "host"}}}},
		DroppedPanels: 3, At: base.Add(2 * time.Second)}
	must(t, s.SessionReport(ctx, sess.ID, report, base.Add(2*time.Second)))
	must(t, s.SessionStream(ctx, sess.ID, "r1", true, base.Add(3*time.Second)))
	want := sess
	want.CreatedAt = micro(base)
	want.Tools = []switchboard.Tool{nav}
	want.Report = report
	want.Stream, want.StreamAt, want.SeenAt = "r1", micro(base.Add(3*time.Second)), micro(base.Add(3*time.Second))
	got, err = s.SessionGet(ctx, sess.ID)
	must(t, err)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("session with its tab (-want +got):\n%s", diff)
	}

	// The stream moves to r2; r1's late detach leaves it there.
	must(t, s.SessionStream(ctx, sess.ID, "r2", true, base.Add(4*time.Second)))
	must(t, s.SessionStream(ctx, sess.ID, "r1", false, base.Add(5*time.Second)))
	got, err = s.SessionGet(ctx, sess.ID)
	must(t, err)
	if got.Stream != "r2" || !got.StreamAt.Equal(micro(base.Add(4*time.Second))) {
		t.Fatalf("after r1's stale detach: stream %q at %s, want r2 at %s", got.Stream, got.StreamAt, base.Add(4*time.Second))
	}
	must(t, s.SessionStream(ctx, sess.ID, "r2", false, base.Add(6*time.Second)))
	got, err = s.SessionGet(ctx, sess.ID)
	must(t, err)
	if got.Stream != "" || !got.StreamAt.Equal(micro(base.Add(6*time.Second))) {
		t.Fatalf("after r2's detach: stream %q at %s", got.Stream, got.StreamAt)
	}

	// An empty advertisement withdraws the tools.
	must(t, s.SessionAdvertise(ctx, sess.ID, nil, base.Add(7*time.Second)))
	if got, err = s.SessionGet(ctx, sess.ID); err != nil || got.Tools != nil {
		t.Fatalf("after an empty advertisement: %v %v", got.Tools, err)
	}

	// A closed session keeps what it had and takes nothing new.
	must(t, s.SessionAdvertise(ctx, sess.ID, []switchboard.Tool{nav}, base.Add(8*time.Second)))
	must(t, s.SessionClose(ctx, sess.ID, base.Add(9*time.Second)))
	wantCode(t, s.SessionAdvertise(ctx, sess.ID, nil, base.Add(10*time.Second)), switchboard.CodeSessionGone)
	wantCode(t, s.SessionReport(ctx, sess.ID, switchboard.TabReport{}, base.Add(10*time.Second)), switchboard.CodeSessionGone)
	got, err = s.SessionGet(ctx, sess.ID)
	must(t, err)
	if len(got.Tools) != 1 || len(got.Report.Contexts) != 1 || !got.SeenAt.Equal(micro(base.Add(8*time.Second))) {
		t.Fatalf("a refused write changed the closed session: %+v", got)
	}
}

// testSessionList: open sessions heard from since a time or with a stream
// attached, newest first; closed ones never.
func testSessionList(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	for i, id := range []string{"s-old", "s-quiet", "s-streaming", "s-recent", "s-closed"} {
		must(t, s.SessionCreate(ctx, switchboard.Session{ID: id, TokenHash: "h", CreatedAt: base.Add(time.Duration(i) * time.Minute)}))
	}
	must(t, s.SessionAdvertise(ctx, "s-old", nil, base))
	must(t, s.SessionStream(ctx, "s-streaming", "r1", true, base))
	must(t, s.SessionReport(ctx, "s-recent", switchboard.TabReport{}, base.Add(time.Hour)))
	must(t, s.SessionAdvertise(ctx, "s-closed", nil, base.Add(time.Hour)))
	must(t, s.SessionClose(ctx, "s-closed", base.Add(time.Hour)))

	ids := func(f switchboard.SessionFilter) []string {
		t.Helper()
		got, err := s.SessionList(ctx, f)
		must(t, err)
		out := []string{}
		for _, g := range got {
			out = append(out, g.ID)
		}
		return out
	}
	if diff := cmp.Diff([]string{"s-recent", "s-streaming"}, ids(switchboard.SessionFilter{SeenSince: base.Add(time.Minute)})); diff != "" {
		t.Fatalf("seen since (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"s-recent", "s-streaming", "s-quiet", "s-old"}, ids(switchboard.SessionFilter{})); diff != "" {
		t.Fatalf("every open session (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"s-recent"}, ids(switchboard.SessionFilter{Limit: 1})); diff != "" {
		t.Fatalf("limit 1 (-want +got):\n%s", diff)
	}
}
