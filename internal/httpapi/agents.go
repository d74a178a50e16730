package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// agentSessionRoutes mounts the agent-session registry (docs/agents.md).
// Every route takes the admin token, an agent token or a tab's session
// token; what each may see and stop is workspace.Viewer's decision.
func (s *Server) agentSessionRoutes() {
	if s.opts.Agents == nil {
		return
	}
	s.mux.HandleFunc("GET /api/v1/agents", s.viewerAuth(s.listAgents))
	s.mux.HandleFunc("GET /api/v1/agents/{id}", s.viewerAuth(s.getAgent))
	s.mux.HandleFunc("POST /api/v1/agents", s.viewerAuth(s.registerAgent))
	s.mux.HandleFunc("POST /api/v1/agents/{id}/heartbeat", s.viewerAuth(s.heartbeatAgent))
	s.mux.HandleFunc("POST /api/v1/agents/{id}/interrupt", s.viewerAuth(s.interruptAgent))
}

type viewerKey struct{}

// viewerAuth admits the admin token, agent tokens and session tokens and
// puts the caller's workspace.Viewer (and principal) in the context.
func (s *Server) viewerAuth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.credential(r, "missing Authorization: Bearer token: the admin token, an agent token or a tab's session token",
			authn.Admin, authn.Agent, authn.Session, authn.User)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		v := workspace.ViewerOf(c.Principal)
		if sid := c.SessionID(); sid != "" {
			user := ""
			if g := s.opts.Governance; g != nil && g.SessionUser != nil {
				if user, err = g.SessionUser(r.Context(), sid); err != nil {
					s.writeError(w, r, err)
					return
				}
			}
			v = workspace.TabViewer(sid, user)
		}
		ctx := switchboard.WithPrincipal(r.Context(), c.Principal)
		h(w, r.WithContext(withViewer(ctx, v)))
	}
}

func withViewer(ctx context.Context, v workspace.Viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

func viewerOf(r *http.Request) workspace.Viewer {
	v, _ := r.Context().Value(viewerKey{}).(workspace.Viewer)
	return v
}

// listAgents: {items: [...], nextCursor?}, newest first, a page at a time
// (?limit=, at most MaxAgentPage; ?cursor= the previous page's
// nextCursor); ?kind=, ?status=, ?session= (a tab), ?active=true (leave
// out finished ones).
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := workspace.Filter{Kind: switchboard.AgentKind(q.Get("kind")), Status: switchboard.AgentStatus(q.Get("status")), SessionID: q.Get("session")}
	switch f.Kind {
	case "", switchboard.AgentChat, switchboard.AgentVoice, switchboard.AgentBackground, switchboard.AgentExternal:
	default:
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "kind must be chat, voice, background or external, not %q", f.Kind))
		return
	}
	switch f.Status {
	case "", switchboard.AgentIdle, switchboard.AgentRunning, switchboard.AgentWaitingApproval, switchboard.AgentDone, switchboard.AgentCancelled:
	default:
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "status must be idle, running, waiting_approval, done or cancelled, not %q", f.Status))
		return
	}
	switch a := q.Get("active"); a {
	case "", "false":
	case "true":
		f.Active = true
	default:
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "active must be true or false, not %q", a))
		return
	}
	limit, err := pageLimit(q.Get("limit"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items, next, err := agentPage(s.opts.Agents.List(r.Context(), viewerOf(r), f), q.Get("cursor"), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, agentList{Items: items, NextCursor: next})
}

// Paging of GET /agents (a listing stays small however
// many sessions a principal opened).
const (
	DefaultAgentPage = 100
	MaxAgentPage     = 500
)

// agentList is a page of GET /agents: the items, and nextCursor while
// more follow (pass it as ?cursor=).
type agentList struct {
	Items      []switchboard.AgentSession `json:"items"`
	NextCursor string                     `json:"nextCursor,omitempty"`
}

func pageLimit(v string) (int, error) {
	if v == "" {
		return DefaultAgentPage, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxAgentPage {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "limit must be within 1..%d, not %q", MaxAgentPage, v)
	}
	return n, nil
}

// agentPage cuts list (newest first: StartedAt descending, then ID) at
// the session cursor names, exclusive, and returns at most limit sessions
// and the cursor of the next page ("" on the last). A cursor is the last
// session's start and id, so a page stays put while sessions come and go.
func agentPage(list []switchboard.AgentSession, cursor string, limit int) ([]switchboard.AgentSession, string, error) {
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		at, id, ok := strings.Cut(string(raw), "|")
		t, terr := time.Parse(time.RFC3339Nano, at)
		if err != nil || !ok || terr != nil {
			return nil, "", switchboard.Errorf(switchboard.CodeInvalidInput, "cursor %q is not a nextCursor of GET /agents", cursor)
		}
		i := sort.Search(len(list), func(i int) bool {
			s := list[i]
			return s.StartedAt.Before(t) || (s.StartedAt.Equal(t) && s.ID > id)
		})
		list = list[i:]
	}
	if len(list) <= limit {
		return list, "", nil
	}
	last := list[limit-1]
	next := base64.RawURLEncoding.EncodeToString([]byte(last.StartedAt.UTC().Format(time.RFC3339Nano) + "|" + last.ID))
	return list[:limit], next, nil
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	a, err := s.opts.Agents.Get(r.Context(), r.PathValue("id"), viewerOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

type registerBody struct {
	Kind      switchboard.AgentKind   `json:"kind"`
	Label     string                  `json:"label"`
	Task      string                  `json:"task,omitempty"`
	Status    switchboard.AgentStatus `json:"status,omitempty"`
	SessionID string                  `json:"sessionId,omitempty"`
}

// registerAgent records a session a host runs itself; it must send
// heartbeats at the interval in the answer.
func (s *Server) registerAgent(w http.ResponseWriter, r *http.Request) {
	var body registerBody
	if err := s.decode(w, r, &body, 16<<10); err != nil {
		s.writeError(w, r, err)
		return
	}
	v := viewerOf(r)
	if body.Label == "" {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "label is required: the name people see for this agent"))
		return
	}
	if v.Principal.Kind == switchboard.PrincipalAgent && (body.Kind == switchboard.AgentChat || body.Kind == switchboard.AgentExternal) {
		// chat is the in-app assistant's kind (or a tab's own), external an
		// MCP client's as the daemon records it: an agent token claiming one
		// would pass for the assistant in listings and digests.
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeForbidden, "kind %s is reserved for sessions the daemon records itself (the assistant, MCP clients); an agent token registers voice or background sessions", body.Kind))
		return
	}
	if v.Principal.Kind == switchboard.PrincipalAgent && body.SessionID != "" {
		// An agent token acts for its token's user: naming a tab would make
		// its session that tab's agent (a handoff to it reaches the tab's
		// assistant), whoever's tab it is.
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeForbidden, "an agent token may not bind an agent to a tab: leave sessionId out (only the admin token or the tab's own session token may name one)"))
		return
	}
	if v.Principal.Kind == switchboard.PrincipalSession && body.SessionID != "" && body.SessionID != v.Principal.ID {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeForbidden, "a tab registers agents only for itself (sessionId %s)", v.Principal.ID))
		return
	}
	if v.Principal.Kind == switchboard.PrincipalSession {
		body.SessionID = v.Principal.ID
	}
	a, err := s.opts.Agents.Start(r.Context(), workspace.Spec{
		Kind: body.Kind, Label: body.Label, Principal: v.Principal, User: registrantUser(v), Transport: workspace.TransportHost,
		Task: body.Task, Status: body.Status, SessionID: body.SessionID, Heartbeat: true,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.registration(a))
}

// registrantUser is the user a registered session acts for: the user
// who registered it, or the tab's user.
func registrantUser(v workspace.Viewer) string {
	switch v.Principal.Kind {
	case switchboard.PrincipalUser:
		return v.Principal.String()
	case switchboard.PrincipalSession:
		return v.User
	}
	return v.Principal.ActsFor() // an agent token acts for its token's user
}

func (s *Server) registration(a switchboard.AgentSession) switchboard.AgentRegistration {
	return switchboard.AgentRegistration{AgentSession: a, HeartbeatIntervalMs: s.opts.Agents.HeartbeatInterval().Milliseconds()}
}

func (s *Server) heartbeatAgent(w http.ResponseWriter, r *http.Request) {
	a, err := s.opts.Agents.Heartbeat(r.Context(), r.PathValue("id"), viewerOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.registration(a))
}

// interruptAgent stops an agent's work: 200 with the cancelled session,
// 409 CONFLICT when it had already ended.
func (s *Server) interruptAgent(w http.ResponseWriter, r *http.Request) {
	a, err := s.opts.Agents.Interrupt(r.Context(), r.PathValue("id"), viewerOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// acting puts the agent session of the caller in ctx: an agent token's
// call over HTTP is its external session's (started on its first call),
// bound to it so that interrupting the session cancels the call. done
// must be called when the call has ended.
func (s *Server) acting(ctx context.Context) (context.Context, func()) {
	p, ok := switchboard.PrincipalFrom(ctx)
	if s.opts.Agents == nil || !ok || p.Kind != switchboard.PrincipalAgent {
		return ctx, func() {}
	}
	if _, has := switchboard.AgentSessionFrom(ctx); has {
		return ctx, func() {}
	}
	id := s.opts.Agents.External(ctx, p, workspace.TransportHTTP, "")
	return s.opts.Agents.Work(switchboard.WithAgentSession(ctx, id), id)
}
