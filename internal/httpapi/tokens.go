package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/job"
	"github.com/switchboardhq/switchboard/internal/quota"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// Governance is what the governance routes serve: agent tokens, approvals,
// the activity ledger, reversal and jobs. With it, agent tokens are
// accepted on the routes an agent may use (tool listing, search, describe
// and call, its own invocations and jobs, approvals to list — never to
// decide); every other route stays the user's.
type Governance struct {
	Tokens    *scope.Tokens
	Approvals *approval.Service
	Ledger    *activity.Ledger
	Jobs      *job.Service
	// SessionUser names the signed-in user a browser session was opened
	// for, so a tab's approval decision is recorded as that user's.
	SessionUser func(ctx context.Context, sessionID string) (string, error)
	// ApprovalEvents subscribes h to every approval event (approval.request,
	// approval.resolved) this replica sees, for the console's live inbox
	// (GET /approvals/events); nil leaves that route out. h must not block.
	ApprovalEvents func(h func(kind string, data []byte)) (cancel func(), err error)
	// Quotas reports the daily quotas' usage (GET /quotas); nil is a
	// daemon without quotas, which the route says.
	Quotas *quota.Book
}

// governanceRoutes mounts tokens, approvals, activity and jobs.
func (s *Server) governanceRoutes() {
	g := s.opts.Governance
	if g == nil {
		return
	}
	if g.Tokens != nil {
		s.mux.HandleFunc("POST /api/v1/tokens", s.admin(s.createToken))
		s.mux.HandleFunc("GET /api/v1/tokens", s.admin(s.listTokens))
		s.mux.HandleFunc("DELETE /api/v1/tokens/{id}", s.admin(s.revokeToken))
	}
	if g.Approvals != nil {
		s.approvalRoutes()
	}
	s.mux.HandleFunc("GET /api/v1/quotas", s.admin(s.listQuotas))
	if g.Ledger != nil {
		s.activityRoutes()
	}
	if g.Jobs != nil {
		s.mux.HandleFunc("GET /api/v1/jobs", s.caller(s.listJobs))
		s.mux.HandleFunc("GET /api/v1/jobs/{id}", s.caller(s.getJob))
		s.mux.HandleFunc("POST /api/v1/jobs/{id}/cancel", s.caller(s.cancelJob))
		s.mux.HandleFunc("GET /api/v1/jobs/{id}/file", s.caller(s.jobFile))
	}
}

// caller wraps h so it runs for the admin (user) token or a valid agent
// token, with the principal in the request's context. Each handler decides
// what an agent may see.
func (s *Server) caller(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.credential(r, "missing Authorization: Bearer token; the admin token is in <data>/admin.token, agents use their own token", authn.Admin, authn.Agent)
		if err != nil {
			if validSession(c) {
				err = switchboard.Errorf(switchboard.CodeForbidden, "%s %s needs the admin token or an agent token; a tab's session token cannot use it", r.Method, r.URL.Path)
			} else if c.Kind == authn.User && c.Principal.ID != "" {
				err = notAdmin(r, c, err)
			}
			s.writeError(w, r, err)
			return
		}
		h(w, r.WithContext(switchboard.WithPrincipal(r.Context(), c.Principal)))
	}
}

// principal is the caller put in ctx by admin, caller or sessionAuth.
func principal(r *http.Request) switchboard.Principal {
	p, _ := switchboard.PrincipalFrom(r.Context())
	return p
}

// createToken mints an agent token; the secret is in this answer only.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var body scope.TokenRequest
	if err := s.decode(w, r, &body, 64<<10); err != nil {
		s.writeError(w, r, err)
		return
	}
	body.Agent, body.User = strings.TrimSpace(body.Agent), strings.TrimSpace(body.User)
	created, err := s.opts.Governance.Tokens.Create(r.Context(), body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.record(r, "token.create", created.Agent, map[string]any{"tokenId": created.ID, "actsFor": created.ActsFor, "allow": created.Allow, "deny": created.Deny,
		"panels": created.Panels, "slots": created.Slots})
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, created)
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	ts, err := s.opts.Governance.Tokens.List(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": ts})
}

// revokeToken ends a token at once: its next request is 401.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	t, err := s.opts.Governance.Tokens.Revoke(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.record(r, "token.revoke", t.Agent, map[string]any{"tokenId": t.ID})
	writeJSON(w, http.StatusOK, t)
}

// record appends a ledger entry for something done through the API (token
// and session changes). A failed append is logged: the action happened.
func (s *Server) record(r *http.Request, verb, target string, details map[string]any) {
	g := s.opts.Governance
	if g == nil || g.Ledger == nil {
		return
	}
	e := &switchboard.ActivityEntry{Actor: "anonymous", Verb: verb, Target: target, Details: mustJSON(details)}
	if p, ok := switchboard.PrincipalFrom(r.Context()); ok {
		e.Actor = p.String()
	} else if tok, ok := bearer(r); ok {
		// Routes with their own authentication (closing a session: the
		// app's backend or the tab itself).
		if s.auth.IsAdmin(tok) {
			e.Actor = "user:admin"
		} else if sid, _, ok := strings.Cut(tok, "."); ok && authn.IsSessionToken(sid) {
			e.Actor = "session:" + sid
		}
	}
	if err := g.Ledger.Append(context.WithoutCancel(r.Context()), e); err != nil {
		s.log.ErrorContext(r.Context(), "append to the ledger", "verb", verb, "err", err)
	}
}

// quotaListMax bounds the subjects GET /quotas lists.
const quotaListMax = 200

// listQuotas is today's usage of every agent and user with its limit,
// most calls first.
func (s *Server) listQuotas(w http.ResponseWriter, r *http.Request) {
	rep, err := s.opts.Governance.Quotas.Usage(r.Context(), quotaListMax)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
