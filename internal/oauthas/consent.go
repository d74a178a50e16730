package oauthas

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/oauth"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// SignIn is the host app's half of the sign-in: its backend, which knows
// the signed-in user, vouches for user on the authorization request the
// browser brought to its sign-in URL (?request=). It answers the one-time
// URL of the consent page to send that browser to. Callers must hold the
// admin token (the same trust as opening a tab's session). A request is
// signed in once; an unknown or expired one is NOT_FOUND.
func (s *Server) SignIn(ctx context.Context, requestID, user string) (string, error) {
	u, err := scope.ParseUser(user)
	if err != nil {
		return "", err
	}
	if u == "" {
		return "", switchboard.Errorf(switchboard.CodeInvalidInput, "user is required: the app's signed-in user, as \"user:<id>\"")
	}
	if u == switchboard.Operator {
		return "", switchboard.Errorf(switchboard.CodeInvalidInput, "an OAuth client cannot act as the operator (%s); vouch for one of the app's users", u)
	}
	st := storage{s}
	a, _, err := st.loadRequest(ctx, requestID)
	if err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeNotFound {
			return "", switchboard.Errorf(switchboard.CodeNotFound, "no sign-in request %q (unknown, expired or finished): the MCP client must start again", requestID)
		}
		return "", err
	}
	if a.User != "" {
		return "", switchboard.Errorf(switchboard.CodeConflict, "the sign-in request %s was signed in already (as %s)", requestID, a.User)
	}
	a.User, a.SignedInAt = u, s.now()
	data, _ := json.Marshal(a)
	if err := s.store.OAuthUpdate(ctx, switchboard.OAuthRequest, a.ID, u, data); err != nil {
		return "", err
	}
	ticket := rand.Text() + rand.Text()
	now := s.now()
	if err := s.store.OAuthPut(ctx, switchboard.OAuthRecord{Kind: switchboard.OAuthTicket, ID: hashSecret(ticket), Ref: a.ID,
		User: u, Client: a.ClientID, CreatedAt: now, ExpiresAt: now.Add(ticketLifetime)}); err != nil {
		return "", err
	}
	s.log.InfoContext(ctx, "OAuth sign-in vouched for by the host", "request", a.ID, "user", u, "client", a.ClientID)
	return s.issuer + ConsentPath + "?ticket=" + url.QueryEscape(ticket), nil
}

// ConsentPath serves the consent page (GET, with the one-time ticket) and
// takes the user's answer (POST).
const ConsentPath = "/oauth/consent"

// LoginPath is where the browser goes when no host sign-in URL is
// configured: a page that says so.
const LoginPath = "/oauth/login"

type consentView struct {
	Ticket, ClientName, ClientID, RedirectHost, User, LookAlike string
	Document, WellKnown, Builtin                                bool
	Scopes                                                      []scopeView
}

type scopeView struct{ Name, Means string }

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Allow {{.ClientName}}?</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#111}
.warn{background:#fff3cd;border:1px solid #c9a227;padding:.75rem;border-radius:6px}
code{background:#f2f2f2;padding:0 .25rem;border-radius:3px}button{font:inherit;padding:.5rem 1.25rem;margin-right:.5rem}</style></head>
<body>
<h1>Allow <span id="client-name">{{.ClientName}}</span> to act for you?</h1>
{{if .LookAlike}}<p class="warn" id="lookalike">This name looks like <strong>{{.LookAlike}}</strong> but is not it. Deny unless you started this yourself from a client you trust.</p>{{end}}
{{if .WellKnown}}<p class="warn" id="unverified">The client chose the name “{{.ClientName}}” itself; it is not verified. Approve only if you just added this app in that client, and its address below is the one you expect.</p>{{end}}
<p>Signed in as <strong id="user">{{.User}}</strong>.</p>
<p>After you answer, your browser goes to <strong id="redirect-host">{{.RedirectHost}}</strong>.
{{if .Builtin}}This is switchboard's own {{.ClientName}}, built in; it stands for you, not for an agent.{{else if .Document}}The client is identified by its metadata at <code>{{.ClientID}}</code>.{{else}}The client registered itself as <code>{{.ClientID}}</code>.{{end}}</p>
<p>It will be able to:</p>
<ul id="scopes">{{range .Scopes}}<li><code>{{.Name}}</code>: {{.Means}}</li>{{end}}</ul>
<p>You can revoke this at any time; its access stops at its next call.</p>
<form method="post" action="consent">
<input type="hidden" name="ticket" value="{{.Ticket}}">
<button type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form>
</body></html>
`))

var messagePage = template.Must(template.New("message").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}</style></head>
<body><h1>{{.Title}}</h1><p id="message">{{.Message}}</p></body></html>
`))

// pageHeaders keep the consent page out of frames (no clickjacking), its
// ticket out of caches and out of Referer headers to other origins
// (same-origin, not no-referrer: with no-referrer browsers send the form's
// POST with Origin: null, which the daemon's origin check refuses).
func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

func (s *Server) message(w http.ResponseWriter, status int, title, msg string) {
	pageHeaders(w)
	w.WriteHeader(status)
	_ = messagePage.Execute(w, map[string]string{"Title": title, "Message": msg})
}

// ticket resolves a consent ticket to its request, refusing used,
// expired and unknown ones.
func (s *Server) ticket(ctx context.Context, t string, use bool) (*request, *client, error) {
	var (
		rec switchboard.OAuthRecord
		err error
	)
	if use {
		rec, err = s.store.OAuthUse(ctx, switchboard.OAuthTicket, hashSecret(t), s.now())
	} else {
		rec, err = s.store.OAuthGet(ctx, switchboard.OAuthTicket, hashSecret(t))
		if err == nil && !rec.UsedAt.IsZero() {
			err = switchboard.Errorf(switchboard.CodeConflict, "used")
		}
	}
	if err == nil && s.now().After(rec.ExpiresAt) {
		err = switchboard.Errorf(switchboard.CodeNotFound, "expired")
	}
	if err != nil {
		return nil, nil, err
	}
	a, _, err := storage{s}.loadRequest(ctx, rec.Ref)
	if err != nil {
		return nil, nil, err
	}
	c, err := s.lookupClient(ctx, a.ClientID)
	if err != nil {
		return nil, nil, err
	}
	return a, c, nil
}

func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.showConsent(w, r)
	case http.MethodPost:
		s.answerConsent(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

const staleTicket = "This sign-in link was used already or has expired. Start again from your MCP client."

func (s *Server) showConsent(w http.ResponseWriter, r *http.Request) {
	a, c, err := s.ticket(r.Context(), r.URL.Query().Get("ticket"), false)
	if err != nil {
		s.log.WarnContext(r.Context(), "OAuth consent page refused", "reason", err.Error())
		s.message(w, http.StatusBadRequest, "Sign-in link not valid", staleTicket)
		return
	}
	v := consentView{Ticket: r.URL.Query().Get("ticket"), ClientName: c.data.Name, ClientID: c.id, User: a.User,
		RedirectHost: redirectHost(a.RedirectURI), Document: c.data.Document, LookAlike: lookalike(c.data.Name),
		WellKnown: !c.data.Document && !c.data.Builtin && claimsWellKnown(c.data.Name), Builtin: c.data.Builtin}
	_, required := s.audienceOf(a.ClientID)
	for _, x := range a.scopesShown(required) {
		means := "use the app's tools as you, within what you may do; calls that need approval still ask you"
		if g, ok := strings.CutPrefix(x, oauth.ToolScopePrefix); ok {
			means = "only the tools matching " + g
		}
		if x == ConsoleScope {
			means = "show you, in switchboard's console, your own approvals (and decide them), agents, grants, runs and activity; nobody else's"
		}
		v.Scopes = append(v.Scopes, scopeView{x, means})
	}
	pageHeaders(w)
	_ = consentPage.Execute(w, v)
}

// answerConsent takes the user's decision. The ticket is used up by the
// first answer, so a page submitted twice (or replayed) does nothing more.
func (s *Server) answerConsent(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		s.message(w, http.StatusBadRequest, "Bad request", "The form could not be read.")
		return
	}
	a, c, err := s.ticket(r.Context(), r.PostForm.Get("ticket"), true)
	if err != nil {
		s.log.WarnContext(r.Context(), "OAuth consent answer refused", "reason", err.Error())
		s.message(w, http.StatusBadRequest, "Sign-in link not valid", staleTicket)
		return
	}
	if r.PostForm.Get("decision") != "approve" {
		s.log.InfoContext(r.Context(), "OAuth consent denied", "request", a.ID, "user", a.User, "client", a.ClientID)
		s.record(r.Context(), a.User, "oauth.deny", Grant{User: a.User, Client: a.ClientID}, map[string]any{"clientName": c.data.Name})
		op.AuthRequestError(w, r, a, oidc.ErrAccessDenied().WithDescription("the user denied the request"), s.provider)
		return
	}
	_, required := s.audienceOf(a.ClientID)
	g := Grant{ID: randomID(grantPrefix), User: a.User, Client: a.ClientID}
	data, _ := json.Marshal(grantData{ClientName: c.data.Name, Agent: oauth.AgentID(a.ClientID),
		RedirectHost: redirectHost(a.RedirectURI), Scopes: a.scopesShown(required)})
	if err := s.store.OAuthPut(r.Context(), switchboard.OAuthRecord{Kind: switchboard.OAuthGrant, ID: g.ID, User: g.User,
		Client: g.Client, Ref: a.ID, Data: data, CreatedAt: s.now()}); err != nil {
		s.log.ErrorContext(r.Context(), "OAuth grant could not be stored", "err", err)
		s.message(w, http.StatusServiceUnavailable, "Try again", "The approval could not be saved. Start again from your MCP client.")
		return
	}
	a.Approved, a.Grant = true, g.ID
	body, _ := json.Marshal(a)
	if err := s.store.OAuthUpdate(r.Context(), switchboard.OAuthRequest, a.ID, a.User, body); err != nil {
		_, _ = s.store.OAuthRevoke(r.Context(), switchboard.OAuthGrant, g.ID, s.now())
		s.message(w, http.StatusConflict, "Sign-in link not valid", staleTicket)
		return
	}
	s.log.InfoContext(r.Context(), "OAuth grant made", "grant", g.ID, "user", g.User, "client", g.Client)
	s.record(r.Context(), g.User, "oauth.grant", g, map[string]any{"clientName": c.data.Name,
		"redirectHost": redirectHost(a.RedirectURI), "scopes": a.scopesShown(required)})
	http.Redirect(w, r, op.AuthCallbackURL(s.provider)(op.ContextWithIssuer(r.Context(), s.issuer), a.ID), http.StatusSeeOther)
}

func redirectHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.Host == "" {
		return u.Scheme + ":" // a private-use scheme: the app registered for it
	}
	return u.Host
}

// loginPage is the sign-in URL when the operator configured none. The
// console and 'switchboard login' land here too, not only MCP clients, so
// the page names all three and the admin-token way in.
func (s *Server) loginPage(w http.ResponseWriter, _ *http.Request) {
	s.message(w, http.StatusServiceUnavailable, "Sign-in is not set up",
		"This app has not set up signing in as one of its users (for MCP clients, the console's \"Sign in as a user\" and 'switchboard login'): its operator must start switchboard with --oauth-login-url, the app's page that signs the user in and vouches for them (docs/oauth.md). The operator can use the console with the admin token meanwhile.")
}

// loginURL is where the authorize endpoint sends the browser.
func (s *Server) loginURL(id string) string {
	if s.login == nil {
		return s.issuer + LoginPath + "?request=" + url.QueryEscape(id)
	}
	u := *s.login
	q := u.Query()
	q.Set("request", id)
	u.RawQuery = q.Encode()
	return u.String()
}
