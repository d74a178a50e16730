package httpapi

import (
	"net/http"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// The open tabs (GET /sessions, GET /sessions/{id}): what
// session.Manager keeps of each tab, its contexts from the workspace, and
// for an agent only what its scope lets it see. Who sees what:
//
//   - the admin token: every tab, in full;
//   - a tab's session token: itself only (another id is NOT_FOUND, as an
//     unknown one is, so ids cannot be probed);
//   - an agent token: every tab (it needs the ids to direct browser calls,
//     which the ambiguity error and the digest already show it), with only
//     the tools its scope admits (registry.Visible, as the catalog does),
//     the contexts only when its scope admits workspace.describe_context
//     (the digest's rule), and never the tab's user.
func (s *Server) tabRoutes() {
	if s.opts.Sessions == nil {
		return
	}
	s.mux.HandleFunc("GET /api/v1/sessions", s.listSessions)
	s.mux.HandleFunc("GET /api/v1/sessions/{id}", s.getSession)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	c, err := s.tabViewer(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var items []switchboard.SessionInfo
	if sid := c.SessionID(); sid != "" {
		info, err := s.opts.Sessions.Info(r.Context(), sid)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		items = []switchboard.SessionInfo{info}
	} else {
		if items, err = s.opts.Sessions.List(r.Context()); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	for i := range items {
		items[i] = s.presentTab(r, c, items[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	c, err := s.tabViewer(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := r.PathValue("id")
	if sid := c.SessionID(); sid != "" && sid != id {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeNotFound, "no session %q; a tab's token sees only its own session", id))
		return
	}
	info, err := s.opts.Sessions.Info(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.presentTab(r, c, info))
}

// tabViewer admits the admin token, agent tokens and session tokens, with
// the principal in the request's context.
func (s *Server) tabViewer(r *http.Request) (authn.Credential, error) {
	return s.credential(r, "missing Authorization: Bearer token: the admin token, an agent token or a tab's session token",
		authn.Admin, authn.Agent, authn.Session)
}

// presentTab trims info to what credential c may see (see tabRoutes) and
// adds the tab's contexts.
func (s *Server) presentTab(r *http.Request, c authn.Credential, info switchboard.SessionInfo) switchboard.SessionInfo {
	ctx := switchboard.WithPrincipal(r.Context(), c.Principal)
	if c.Kind == authn.Session {
		ctx = workspace.WithUser(ctx, info.User)
	}
	if c.Kind == authn.Agent {
		info.User = ""
		tools := make([]switchboard.Tool, 0, len(info.Tools))
		for _, t := range info.Tools {
			if s.reg.Visible(ctx, t) {
				tools = append(tools, t)
			}
		}
		info.Tools = tools
	}
	if s.opts.Workspace != nil {
		info.Contexts = s.opts.Workspace.TabContexts(ctx, info.ID)
	}
	return info
}
