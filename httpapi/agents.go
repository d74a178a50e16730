package httpapi

import (
	"context"
	"net/http"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/authn"
	"github.com/switchboardhq/switchboard/workspace"
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
			authn.Admin, authn.Agent, authn.Session)
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

// listAgents: {items: [...]}, newest first; ?kind=, ?status=, ?session=
// (a tab), ?active=true (leave out finished ones).
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
	writeJSON(w, http.StatusOK, map[string]any{"items": s.opts.Agents.List(r.Context(), viewerOf(r), f)})
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
