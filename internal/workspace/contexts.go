package workspace

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/strictjson"
)

// Bounds of a tab's report (PUT /sessions/{id}/context). Field lengths are
// refused past their limit (the SDK trims before it sends); counts are not:
// a tab that reports thousands of panels is kept to MaxContextsPerTab and
// MaxPanelsPerTab, in attention order, and the rest is counted.
const (
	MaxContextsPerTab = 32
	MaxPanelsPerTab   = 500
	maxIDLen          = 200
	maxKindLen        = 64
	maxLabelLen       = 300
	maxRouteLen       = 2048
	maxSelectionLen   = 1000
)

// FromSite marks what a tab reported: page content, which anyone who can
// write to the site controls (agent.FromSite is the same word).
const FromSite = "site-html"

// ReportResult says what the daemon kept of a tab's report.
type ReportResult struct {
	Contexts int           `json:"contexts"`
	Panels   int           `json:"panels"`
	Dropped  ReportDropped `json:"dropped"`
}

// ReportDropped counts what a report held past the bounds.
type ReportDropped struct {
	Contexts int `json:"contexts"`
	Panels   int `json:"panels"`
}

// tab is one browser session's latest report.
type tab struct {
	session  string
	user     string // the signed-in user the tab was opened for ("" none)
	contexts []switchboard.WorkspaceContext
	dropped  ReportDropped
	at       time.Time
	unwatch  func()
}

// Report replaces the contexts of tab sessionID (opened for user) with
// cs, after validating every field; on a validation error nothing changes.
// The daemon sets each context's SessionID and provenance (site-html:
// tabs report page content); values a tab sends for them are ignored.
// With Options.Tabs the report is stored with the session first (an
// error there changes nothing) and announced to the other replicas.
func (w *Workspace) Report(ctx context.Context, sessionID, user string, cs []switchboard.WorkspaceContext) (ReportResult, error) {
	if err := validateContexts(cs); err != nil {
		return ReportResult{}, err
	}
	kept, res := budgetReport(cs)
	for i := range kept {
		kept[i].SessionID = sessionID
		kept[i].Provenance = &switchboard.Provenance{DerivedFrom: FromSite}
	}
	at := w.now()
	if w.opts.Tabs != nil {
		r := switchboard.TabReport{Contexts: kept, DroppedContexts: res.Dropped.Contexts, DroppedPanels: res.Dropped.Panels, At: at}
		if err := w.opts.Tabs.SessionReport(ctx, sessionID, r, at); err != nil {
			return ReportResult{}, err
		}
	}
	w.put(sessionID, normalUser(user), kept, res.Dropped, at)
	w.announce(sessionID)
	return res, nil
}

// put keeps a tab's report unless a newer one is kept already (reports
// relayed from other replicas may arrive out of order).
func (w *Workspace) put(sessionID, user string, kept []switchboard.WorkspaceContext, dropped ReportDropped, at time.Time) {
	w.mu.Lock()
	t := w.tabs[sessionID]
	fresh := t == nil
	if fresh {
		t = &tab{session: sessionID}
		w.tabs[sessionID] = t
	} else if at.Before(t.at) {
		w.mu.Unlock()
		return
	}
	t.user, t.contexts, t.dropped, t.at = user, kept, dropped, at
	w.mu.Unlock()
	if fresh && w.opts.Sessions != nil {
		// The contexts go with the tab: closed, or gone past its grace window.
		unwatch, err := w.opts.Sessions.WatchGone(sessionID, func() { w.DropSession(sessionID) })
		if err == nil {
			w.mu.Lock()
			if w.tabs[sessionID] == t {
				t.unwatch = unwatch
			} else {
				unwatch()
			}
			w.mu.Unlock()
		}
	}
	w.Touch()
}

// DropSession forgets a tab's contexts (its session closed or expired).
func (w *Workspace) DropSession(sessionID string) {
	w.mu.Lock()
	t := w.tabs[sessionID]
	delete(w.tabs, sessionID)
	w.mu.Unlock()
	if t == nil {
		return
	}
	if t.unwatch != nil {
		go t.unwatch() // WatchGone's callback runs on the bus; do not unsubscribe inside it
	}
	w.Touch()
}

// Context returns one context in full (panels, route, selection) for
// workspace.describe_context. Context ids are the tab's own, so two tabs
// may share one: sessionID picks the tab; without it the most attended,
// most recently reported one answers.
func (w *Workspace) Context(ctx context.Context, id, sessionID string) (switchboard.WorkspaceContext, error) {
	user := viewerUser(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	var (
		best   switchboard.WorkspaceContext
		bestAt time.Time
		found  bool
	)
	for _, t := range w.tabs {
		if (sessionID != "" && t.session != sessionID) || !userSees(user, t.user) {
			continue
		}
		for _, c := range t.contexts {
			if c.ID != id {
				continue
			}
			if !found || rank(c.Attention) < rank(best.Attention) || (rank(c.Attention) == rank(best.Attention) && t.at.After(bestAt)) {
				best, bestAt, found = c, t.at, true
			}
		}
	}
	if !found {
		return best, switchboard.Errorf(switchboard.CodeNotFound, "no context %q in the user's open tabs; the digest lists their ids", id)
	}
	best.Panels = slices.Clone(best.Panels)
	return best, nil
}

// validateContexts refuses a report with an unknown attention or origin, a
// missing or over-long field, or a duplicate id, naming the field.
func validateContexts(cs []switchboard.WorkspaceContext) error {
	seen := make(map[string]bool, len(cs))
	for i, c := range cs {
		at := fmt.Sprintf("contexts[%d]", i)
		if err := text(at+".id", c.ID, 1, maxIDLen); err != nil {
			return err
		}
		if seen[c.ID] {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "%s.id %q appears twice; context ids are unique within a tab", at, c.ID)
		}
		seen[c.ID] = true
		if err := label(at+".kind", c.Kind, 1, maxKindLen); err != nil {
			return err
		}
		if err := label(at+".label", c.Label, 0, maxLabelLen); err != nil {
			return err
		}
		if rank(c.Attention) < 0 {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "%s.attention must be focused, visible or background, not %q", at, c.Attention)
		}
		if err := text(at+".route", c.Route, 0, maxRouteLen); err != nil {
			return err
		}
		if s := c.Selection; s != nil {
			if err := text(at+".selection.panelId", s.PanelID, 0, maxIDLen); err != nil {
				return err
			}
			if err := text(at+".selection.nodeId", s.NodeID, 0, maxIDLen); err != nil {
				return err
			}
			if err := text(at+".selection.text", s.Text, 0, maxSelectionLen); err != nil {
				return err
			}
		}
		panels := make(map[string]bool, len(c.Panels))
		for j, p := range c.Panels {
			pat := fmt.Sprintf("%s.panels[%d]", at, j)
			if err := text(pat+".id", p.ID, 1, maxIDLen); err != nil {
				return err
			}
			if panels[p.ID] {
				return switchboard.Errorf(switchboard.CodeInvalidInput, "%s.id %q appears twice in context %q", pat, p.ID, c.ID)
			}
			panels[p.ID] = true
			if err := label(pat+".type", p.Type, 1, maxKindLen); err != nil {
				return err
			}
			if err := label(pat+".title", p.Title, 0, maxLabelLen); err != nil {
				return err
			}
			if p.Origin != "host" && p.Origin != "agent" {
				return switchboard.Errorf(switchboard.CodeInvalidInput, "%s.origin must be host or agent, not %q", pat, p.Origin)
			}
		}
	}
	return nil
}

// label is text a person reads as a name (a context's label and kind, a
// panel's title and type): besides text's bounds, the rule agent labels
// follow (strictjson.Invisible) — no control or format character, such as
// a bidirectional override, that can hide or reorder what is shown.
func label(field, v string, min, max int) error {
	if err := text(field, v, min, max); err != nil {
		return err
	}
	if r, bad := strictjson.Invisible(v); bad {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s contains the control or format character %U, which can hide or reorder what a reader sees; send visible characters", field, r)
	}
	return nil
}

func text(field, v string, min, max int) error {
	switch n := utf8.RuneCountInString(v); {
	case !utf8.ValidString(v):
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s is not valid UTF-8", field)
	case n < min:
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s is required", field)
	case n > max:
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s is %d characters long; the limit is %d (trim it before reporting)", field, n, max)
	}
	return nil
}

// budgetReport keeps at most MaxContextsPerTab contexts and
// MaxPanelsPerTab panels, the most attended first (the report's order
// within one attention), and counts the rest.
func budgetReport(cs []switchboard.WorkspaceContext) ([]switchboard.WorkspaceContext, ReportResult) {
	sorted := slices.Clone(cs)
	slices.SortStableFunc(sorted, func(a, b switchboard.WorkspaceContext) int { return cmp.Compare(rank(a.Attention), rank(b.Attention)) })
	var res ReportResult
	kept := make([]switchboard.WorkspaceContext, 0, min(len(sorted), MaxContextsPerTab))
	panels := 0
	for _, c := range sorted {
		if len(kept) == MaxContextsPerTab {
			res.Dropped.Contexts++
			res.Dropped.Panels += len(c.Panels)
			continue
		}
		room := MaxPanelsPerTab - panels
		if len(c.Panels) > room {
			res.Dropped.Panels += len(c.Panels) - room
			c.Panels = c.Panels[:room]
		}
		c.Panels = slices.Clone(c.Panels)
		if c.Panels == nil {
			c.Panels = []switchboard.WorkspacePanel{}
		}
		panels += len(c.Panels)
		kept = append(kept, c)
	}
	res.Contexts, res.Panels = len(kept), panels
	return kept, res
}

// rank orders attention: focused first; -1 for an unknown value.
func rank(a switchboard.Attention) int {
	switch a {
	case switchboard.AttentionFocused:
		return 0
	case switchboard.AttentionVisible:
		return 1
	case switchboard.AttentionBackground:
		return 2
	}
	return -1
}

// normalUser is the user's id without its kind ("user:alice" → "alice").
func normalUser(u string) string {
	p, _ := switchboard.UserPrincipal(strings.TrimSpace(u))
	return p.ID
}

type userKey struct{}

// WithUser returns ctx naming the signed-in user whose tabs a reader sees:
// the assistant in a tab reads the workspace of the user that tab was
// opened for. Without it (the admin, an agent token) every tab is seen.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, normalUser(user))
}

type tabKey struct{}

// WithTab is WithUser for a reader that is one tab (its session token, the
// assistant running in it): the tab's own approvals are the ones it may
// decide (TabMayDecide).
func WithTab(ctx context.Context, sessionID, user string) context.Context {
	return context.WithValue(WithUser(ctx, user), tabKey{}, sessionID)
}

func viewerTab(ctx context.Context) string {
	s, _ := ctx.Value(tabKey{}).(string)
	return s
}

func viewerUser(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// userSees: a reader bound to a user sees that user's tabs and tabs opened
// without naming one (the daemon's own user); an unbound reader sees all.
func userSees(viewer, owner string) bool { return viewer == "" || owner == "" || viewer == owner }

// TabContexts returns the contexts tab sessionID last reported, in full,
// when the reader in ctx may see them: the digest's rule (an agent whose
// scope admits workspace.describe_context; a reader bound to a user sees
// that user's tabs). Empty, never nil, otherwise.
func (w *Workspace) TabContexts(ctx context.Context, sessionID string) []switchboard.WorkspaceContext {
	out := []switchboard.WorkspaceContext{}
	if !w.gate(ctx, ToolDescribeContext) {
		return out
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.tabs[sessionID]
	if t == nil || !userSees(viewerUser(ctx), t.user) {
		return out
	}
	for _, c := range t.contexts {
		c.Panels = slices.Clone(c.Panels)
		out = append(out, c)
	}
	return out
}
