package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/sse"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

func (s *Server) approvalRoutes() {
	s.mux.HandleFunc("GET /api/v1/approvals", s.decider(s.listApprovals))
	s.mux.HandleFunc("GET /api/v1/approvals/{id}", s.decider(s.getApproval))
	s.mux.HandleFunc("POST /api/v1/approvals/{id}", s.decider(s.decideApproval))
	if s.opts.Governance.ApprovalEvents != nil {
		s.mux.HandleFunc("GET /api/v1/approvals/events", s.adminOrUser(s.approvalEvents))
	}
}

// approvalEventBuffer bounds the events queued for one slow console; past
// it the stream ends and the console reconnects and re-reads the list.
const approvalEventBuffer = 64

// approvalEvents streams every approval event as SSE (event: the kind,
// data: its JSON), for the user's console: it re-reads GET /approvals on
// each one, so an event lost across a reconnect costs nothing. The stream
// opens with a "ready" event, sent once the subscription is in place, so a
// client that lists after it misses nothing.
func (s *Server) approvalEvents(w http.ResponseWriter, r *http.Request) {
	type event struct {
		kind string
		data []byte
	}
	ch := make(chan event, approvalEventBuffer)
	overflow := make(chan struct{})
	var once sync.Once
	v, own := workspace.ViewerOf(principal(r)), ownUser(r) != ""
	cancel, err := s.opts.Governance.ApprovalEvents(func(kind string, data []byte) {
		if own { // a person signed in to the console: their own approvals' events
			var a switchboard.ApprovalRequest
			if json.Unmarshal(data, &a) != nil || !workspace.SeesApproval(r.Context(), s.opts.Agents, v, a) {
				return
			}
		}
		select {
		case ch <- event{kind, bytes.Clone(data)}:
		default:
			once.Do(func() { close(overflow) })
		}
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer cancel()
	w.Header().Set("Cache-Control", "no-store")
	sw := sse.Start(w, streamWriteTimeout)
	sw.Event(sse.Event{Event: "ready", Data: []byte(`{}`)})
	if sw.Flush() != nil {
		return
	}
	beat := time.NewTicker(activityHeartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-overflow:
			return
		case ev := <-ch:
			sw.Event(sse.Event{Event: ev.kind, Data: ev.data})
		case <-beat.C:
			sw.Comment(sse.Heartbeat)
		}
		if sw.Flush() != nil {
			return
		}
	}
}

// decider accepts the admin token, an agent token (to list its own
// requests; deciding is FORBIDDEN), a person signed in to the console (as
// themself) and a browser session token, checked once. A tab is the
// signed-in user's own, so its decision is the user's (channel "sdk") — but
// only for the approvals workspace.TabMayDecide gives it: its own
// assistant's calls in that tab, and the escalated calls of background and
// external agents acting for its user. Anything else is decided with the
// user's token (console, CLI).
func (s *Server) decider(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.credential(r, "missing Authorization: Bearer token: the admin token, an agent token, a tab's session token or a console sign-in",
			authn.Admin, authn.Agent, authn.User, authn.Session)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if c.Kind != authn.Session { // the operator, an agent, or a person signed in as themself
			h(w, r.WithContext(switchboard.WithPrincipal(r.Context(), c.Principal)))
			return
		}
		sid := c.SessionID()
		p, err := s.tabUser(r.Context(), sid)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx := switchboard.WithPrincipal(r.Context(), p)
		ctx = context.WithValue(ctx, tabKey{}, tab{sid, p.String()})
		h(w, r.WithContext(withChannel(ctx, approval.ChannelSDK)))
	}
}

// tabUser is the signed-in user a browser session stands for: a tab's
// decision is its user's (the one rule for tabs that decide, used by the
// approvals routes and by a resume on the assistant's routes).
func (s *Server) tabUser(ctx context.Context, sid string) (switchboard.Principal, error) {
	user := ""
	if f := s.opts.Governance.SessionUser; f != nil {
		var err error
		if user, err = f(ctx, sid); err != nil {
			return switchboard.Principal{}, err
		}
	}
	p, ok := switchboard.UserPrincipal(user)
	if !ok {
		p.ID = "admin" // a session opened without naming a user is the daemon's user
	}
	return p, nil
}

// listApprovals: pending by default (?status=pending|approved|denied|
// expired|cancelled|all), ?agent=, ?invocation=, ?limit=. An agent sees
// only its own.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := switchboard.ApprovalFilter{Status: switchboard.ApprovalPending, Agent: q.Get("agent"), InvocationID: q.Get("invocation")}
	switch st := q.Get("status"); st {
	case "":
	case "all":
		f.Status = ""
	case "pending", "approved", "denied", "expired", "cancelled":
		f.Status = switchboard.ApprovalStatus(st)
	default:
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "status must be pending, approved, denied, expired, cancelled or all, not %q", st))
		return
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "limit must be within 1..1000"))
			return
		}
		f.Limit = n
	}
	if p := principal(r); p.Kind == switchboard.PrincipalAgent {
		f.Agent = p.String()
	}
	v := s.approvalViewer(r)
	f.User = workspace.UserFilter(v)
	items, err := s.opts.Governance.Approvals.List(r.Context(), f)
	if err == nil {
		mine := items[:0]
		for _, a := range items {
			if workspace.SeesApproval(r.Context(), s.opts.Agents, v, a) {
				mine = append(mine, a)
			}
		}
		items = mine
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	a, err := s.opts.Governance.Approvals.Get(r.Context(), r.PathValue("id"))
	if err == nil {
		if !workspace.SeesApproval(r.Context(), s.opts.Agents, s.approvalViewer(r), a) {
			err = noApproval(r)
		}
	} else if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		err = noApproval(r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

type decisionBody struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// Channel lets the user's own clients say how the decision was made
	// (http or cli); a tab's decision is always sdk.
	Channel string `json:"channel,omitempty"`
}

// decideApproval settles a request: {decision: approve|deny, reason?}.
func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request) {
	var body decisionBody
	if err := s.decode(w, r, &body, 16<<10); err != nil {
		s.writeError(w, r, err)
		return
	}
	d := approval.Decision{By: principal(r), Reason: body.Reason, Channel: approval.ChannelHTTP}
	switch body.Decision {
	case "approve":
		d.Approve = true
	case "deny":
	default:
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, `decision must be "approve" or "deny", not %q`, body.Decision))
		return
	}
	if ch := channelOf(r); ch != "" {
		d.Channel = ch
	} else if body.Channel == approval.ChannelCLI {
		d.Channel = approval.ChannelCLI
	}
	if _, ok := tabOf(r); ok {
		// One the tab may not decide is one it does not know: the same
		// NOT_FOUND as an unknown id, so ids of other users' approvals
		// cannot be probed.
		a, err := s.opts.Governance.Approvals.Get(r.Context(), r.PathValue("id"))
		if (err == nil && !s.tabApproval(r, a)) || switchboard.CodeOf(err) == switchboard.CodeNotFound {
			err = noApproval(r)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	a, err := s.opts.Governance.Approvals.Decide(r.Context(), r.PathValue("id"), d)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// noApproval is the answer about an approval id the caller does not know
// or may not see: one answer for both, so ids cannot be probed.
func noApproval(r *http.Request) error {
	return switchboard.Errorf(switchboard.CodeNotFound, "no approval %q", r.PathValue("id"))
}

// tabApproval reports whether the request's tab may see and decide a
// (workspace.SeesApproval is the rule).
func (s *Server) tabApproval(r *http.Request, a switchboard.ApprovalRequest) bool {
	return workspace.MayDecide(r.Context(), s.opts.Agents, s.approvalViewer(r), a)
}

// approvalViewer is who asks about approvals: the tab, as its user, when
// the request came with a session token; else the caller.
func (s *Server) approvalViewer(r *http.Request) workspace.Viewer {
	if t, ok := tabOf(r); ok {
		return workspace.TabViewer(t.sid, t.user)
	}
	return workspace.ViewerOf(principal(r))
}

type tabKey struct{}

// tab is the browser session a request came with and its user.
type tab struct{ sid, user string }

// tabOf returns the tab when the request came with a session token.
func tabOf(r *http.Request) (tab, bool) {
	t, ok := r.Context().Value(tabKey{}).(tab)
	return t, ok
}

type channelKey struct{}

func withChannel(ctx context.Context, ch string) context.Context {
	return context.WithValue(ctx, channelKey{}, ch)
}

func channelOf(r *http.Request) string {
	ch, _ := r.Context().Value(channelKey{}).(string)
	return ch
}
