package httpapi

import (
	"net/http"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/authn"
)

// adminOrUser admits the admin token (every record) and a person signed
// in to the console (authn.User: their own records). The handler narrows
// what it answers by the principal (ownUser); the rule of whose record is
// whose is workspace's (RecordFilter, SeesEntry, SeesApproval).
func (s *Server) adminOrUser(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.credential(r, "missing Authorization: Bearer token: the admin token, or sign in to the console as a user", authn.Admin, authn.User)
		if err != nil {
			s.writeError(w, r, notAdmin(r, c, err))
			return
		}
		h(w, r.WithContext(switchboard.WithPrincipal(r.Context(), c.Principal)))
	}
}

// ownUser is the user whose own records the request may read: "" for
// the operator (all of them), else "user:<id>".
func ownUser(r *http.Request) string {
	p := principal(r)
	if p.String() == switchboard.Operator {
		return ""
	}
	return p.ActsFor()
}

// notAdmin turns the refusal of a credential on a route that needs the
// admin token into what the caller can act on: a valid agent, tab or
// console credential is FORBIDDEN there (the token is good, the route is
// not theirs), anything else keeps its own error.
func notAdmin(r *http.Request, c authn.Credential, err error) error {
	switch {
	case c.Kind == authn.Agent && c.Principal.ID != "":
		return switchboard.Errorf(switchboard.CodeForbidden, "%s %s is the operator's; %s's agent token cannot use it", r.Method, r.URL.Path, c.Principal)
	case validSession(c):
		return switchboard.Errorf(switchboard.CodeForbidden, "%s %s needs the admin token; a tab's session token cannot use it", r.Method, r.URL.Path)
	case c.Kind == authn.User && c.Principal.ID != "":
		return switchboard.Errorf(switchboard.CodeForbidden, "%s %s needs the admin token; signed in as %s you see and manage your own approvals, agents, grants, runs and activity", r.Method, r.URL.Path, c.Principal)
	}
	return err
}

// ownerAuth admits the admin token, an agent token and a person signed in
// to the console: routes whose records the service narrows itself by the
// record rule (tasks), so each sees and manages only their own.
func (s *Server) ownerAuth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.credential(r, "missing Authorization: Bearer token; the admin token is in <data>/admin.token, agents use their own token, people sign in to the console", authn.Admin, authn.Agent, authn.User)
		if err != nil {
			if validSession(c) {
				err = switchboard.Errorf(switchboard.CodeForbidden, "%s %s needs the admin token, an agent token or a console sign-in; a tab's session token cannot use it", r.Method, r.URL.Path)
			}
			s.writeError(w, r, err)
			return
		}
		h(w, r.WithContext(switchboard.WithPrincipal(r.Context(), c.Principal)))
	}
}
