// Package authn is where the daemon learns who calls: an Authenticator
// turns a request's bearer credential into a switchboard.Principal — the
// admin token into the user, an agent token into its agent with its scope,
// a browser session token into its session. The daemon builds one and hands
// it to every transport (httpapi, mcpserver). A transport only translates:
// which kinds of credential a route accepts is the route's decision;
// checking a credential is the Authenticator's.
package authn

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// Kind is what kind of credential a bearer token is.
type Kind string

const (
	// Admin is the daemon's admin token: the user (user:admin).
	Admin Kind = "admin"
	// Agent is a scoped agent token (scope.Tokens).
	Agent Kind = "agent"
	// Session is a browser tab's session token (session.Manager).
	Session Kind = "session"
	// OAuth is an OAuth access token from the authorization server /mcp
	// trusts (package oauth): an agent (the client) acting for a user.
	OAuth Kind = "oauth"
	// User is a person signed in to the console through the embedded
	// authorization server (an OAuth access token for the HTTP API, not
	// for /mcp): the user themself, no agent. Routes that show or manage
	// a person's own records take it.
	User Kind = "user"
)

// sessionPrefix starts every session id, and so every session token
// ("<id>.<secret>"); session.Manager mints them.
const sessionPrefix = "ses_"

// Credential is a checked bearer token: its kind and who holds it. For a
// Session credential, Principal is session:<id>. Scopes are an OAuth
// credential's OAuth scopes (the route decides which it needs).
type Credential struct {
	Kind      Kind
	Principal switchboard.Principal
	Scopes    []string
}

// SessionID is the browser session of a Session credential, else "".
func (c Credential) SessionID() string {
	if c.Kind != Session {
		return ""
	}
	return c.Principal.ID
}

// AgentTokens checks agent tokens; *scope.Tokens implements it.
type AgentTokens interface {
	Authenticate(ctx context.Context, token string) (switchboard.Principal, error)
}

// Sessions checks browser session tokens; *session.Manager implements it.
type Sessions interface {
	Authenticate(ctx context.Context, token string) (sessionID string, err error)
}

// OAuthTokens checks OAuth access tokens; *oauth.Verifier implements it.
type OAuthTokens interface {
	Authenticate(ctx context.Context, token string) (switchboard.Principal, []string, error)
}

// Options configures an Authenticator. AdminToken is required; leave
// Agents, Sessions, OAuth or Users nil (an untyped nil) when the daemon
// has none.
type Options struct {
	AdminToken string
	Agents     AgentTokens
	Sessions   Sessions
	OAuth      OAuthTokens
	// Users checks console sign-ins: OAuth access tokens whose audience
	// is UsersAudience (the HTTP API), each standing for its user.
	Users         OAuthTokens
	UsersAudience string
}

// Authenticator checks bearer credentials. Safe for concurrent use.
type Authenticator struct {
	admin    []byte
	agents   AgentTokens
	sessions Sessions
	oauth    OAuthTokens
	users    OAuthTokens
	usersAud string
}

// New returns an Authenticator.
func New(opts Options) (*Authenticator, error) {
	if opts.AdminToken == "" {
		return nil, errors.New("authn: Options.AdminToken is required")
	}
	return &Authenticator{admin: []byte(opts.AdminToken), agents: opts.Agents, sessions: opts.Sessions, oauth: opts.OAuth,
		users: opts.Users, usersAud: opts.UsersAudience}, nil
}

// Authenticate checks the request's bearer token (see Token). A request
// without one is UNAUTHORIZED with kind "".
func (a *Authenticator) Authenticate(r *http.Request) (Credential, error) {
	tok, ok := Bearer(r)
	if !ok {
		return Credential{}, switchboard.Errorf(switchboard.CodeUnauthorized,
			"missing Authorization: Bearer token; the admin token is in <data>/admin.token")
	}
	return a.Token(r.Context(), tok)
}

// Token checks tok: the admin token (compared in constant time), else an
// agent token or a session token by their form. An unknown, wrong or
// revoked token is UNAUTHORIZED; a closed session's own token is
// SESSION_GONE, so a tab knows to stop reconnecting. On an error the
// credential still carries the kind tok has the form of ("" for none), so
// a route that does not take that kind can answer with its own refusal
// instead of the check's.
func (a *Authenticator) Token(ctx context.Context, tok string) (Credential, error) {
	if a.IsAdmin(tok) {
		return Credential{Kind: Admin, Principal: switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}}, nil
	}
	switch {
	case a.agents != nil && scope.IsAgentToken(tok):
		p, err := a.agents.Authenticate(ctx, tok)
		if err != nil {
			return Credential{Kind: Agent}, err
		}
		return Credential{Kind: Agent, Principal: p}, nil
	case a.sessions != nil && IsSessionToken(tok):
		id, err := a.sessions.Authenticate(ctx, tok)
		if err != nil {
			return Credential{Kind: Session}, err
		}
		return Credential{Kind: Session, Principal: switchboard.Principal{Kind: switchboard.PrincipalSession, ID: id}}, nil
	case a.users != nil && IsJWT(tok) && forAudience(tok, a.usersAud):
		// The audience read unverified only picks the verifier; the
		// verifier checks it with the signature.
		p, scopes, err := a.users.Authenticate(ctx, tok)
		if err != nil {
			return Credential{Kind: User}, err
		}
		return Credential{Kind: User, Principal: p, Scopes: scopes}, nil
	case a.oauth != nil && IsJWT(tok):
		p, scopes, err := a.oauth.Authenticate(ctx, tok)
		if err != nil {
			return Credential{Kind: OAuth}, err
		}
		return Credential{Kind: OAuth, Principal: p, Scopes: scopes}, nil
	}
	return Credential{}, switchboard.Errorf(switchboard.CodeUnauthorized, "the bearer token is not valid for this daemon")
}

// IsAdmin reports, in constant time, whether tok is the admin token.
func (a *Authenticator) IsAdmin(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), a.admin) == 1
}

// IsSessionToken reports whether tok has the form of a browser session
// token; it does not check it.
func IsSessionToken(tok string) bool { return strings.HasPrefix(tok, sessionPrefix) }

// IsJWT reports whether tok has the form of a JWS compact
// serialization (three dot-separated parts), as OAuth access tokens from
// an issuer do; it does not check it.
func IsJWT(tok string) bool { return strings.Count(tok, ".") == 2 }

// Bearer returns the request's bearer token, if it has one.
func Bearer(r *http.Request) (string, bool) {
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}

// maxPeekBytes bounds the token forAudience parses (the verifiers refuse
// larger ones anyway).
const maxPeekBytes = 16 << 10

// forAudience reports whether the JWT tok names aud in its aud claim,
// read without verifying it: only to choose which verifier checks it.
func forAudience(tok, aud string) bool {
	if aud == "" || len(tok) > maxPeekBytes {
		return false
	}
	t, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.EdDSA})
	if err != nil {
		return false
	}
	var c jwt.Claims
	if t.UnsafeClaimsWithoutVerification(&c) != nil {
		return false
	}
	return c.Audience.Contains(aud)
}
