package httpapi

import (
	"context"
	"net/http"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/oauthas"
)

// OAuthServer is the embedded authorization server's API side;
// *oauthas.Server implements it.
type OAuthServer interface {
	SignIn(ctx context.Context, request, user string) (string, error)
	Grants(ctx context.Context, user string) ([]oauthas.Grant, error)
	Revoke(ctx context.Context, id, user string) (oauthas.Grant, error)
}

func (s *Server) oauthRoutes() {
	if s.opts.OAuth == nil {
		return
	}
	s.mux.HandleFunc("POST /api/v1/oauth/signins", s.admin(s.oauthSignIn))
	s.mux.HandleFunc("GET /api/v1/oauth/grants", s.grantOwner(s.listGrants))
	s.mux.HandleFunc("DELETE /api/v1/oauth/grants/{id}", s.grantOwner(s.revokeGrant))
}

// oauthSignIn: the host's backend vouches for its signed-in user on the
// sign-in request its page received: {"request": "<id>", "user":
// "user:alice"} → 201 {"url": "<one-time consent URL>"}.
func (s *Server) oauthSignIn(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Request string `json:"request"`
		User    string `json:"user"`
	}
	if err := s.decode(w, r, &req, 4<<10); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Request == "" {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "request is required: the ?request= value the sign-in page was opened with"))
		return
	}
	u, err := s.opts.OAuth.SignIn(r.Context(), req.Request, req.User)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"url": u})
}

type grantUserKey struct{}

// grantOwner admits the admin token (every user's grants) and a tab's
// session token (its user's own). An agent's token, OAuth ones included,
// cannot manage grants: an agent must not widen or end its user's other
// grants.
func (s *Server) grantOwner(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.credential(r, "missing Authorization: Bearer token: the admin token or a tab's session token", authn.Admin, authn.Session, authn.User)
		if err != nil {
			if (c.Kind == authn.Agent || c.Kind == authn.OAuth) && c.Principal.ID != "" {
				err = switchboard.Errorf(switchboard.CodeForbidden, "%s %s is for the user; %s's token cannot manage grants", r.Method, r.URL.Path, c.Principal)
			}
			s.writeError(w, r, err)
			return
		}
		user := ""
		if c.Kind == authn.User { // a person signed in to the console: their own grants
			user = c.Principal.String()
		} else if sid := c.SessionID(); sid != "" {
			if user, err = s.sessionUser(r, sid); err != nil {
				s.writeError(w, r, err)
				return
			}
			if user == "" {
				s.writeError(w, r, switchboard.Errorf(switchboard.CodeForbidden, "this tab was opened for no user, so it has no grants"))
				return
			}
		} else if q := r.URL.Query().Get("user"); q != "" {
			p, _ := switchboard.UserPrincipal(q)
			user = p.String()
		}
		h(w, r.WithContext(context.WithValue(r.Context(), grantUserKey{}, user)))
	}
}

func grantUser(r *http.Request) string { u, _ := r.Context().Value(grantUserKey{}).(string); return u }

// listGrants: {items: [...]}, newest first, revoked ones included.
func (s *Server) listGrants(w http.ResponseWriter, r *http.Request) {
	gs, err := s.opts.OAuth.Grants(r.Context(), grantUser(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": gs})
}

// revokeGrant revokes a grant: its tokens stop at their next call.
func (s *Server) revokeGrant(w http.ResponseWriter, r *http.Request) {
	g, err := s.opts.OAuth.Revoke(r.Context(), r.PathValue("id"), grantUser(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, g)
}
