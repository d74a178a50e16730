package scope

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

// TokenPrefix starts every agent token, so a bearer can be told from the
// admin token and session tokens without a lookup.
const TokenPrefix = "sbt_"

// TokenStore is the part of switchboard.Store tokens need.
type TokenStore interface {
	TokenCreate(ctx context.Context, t switchboard.AgentToken) error
	TokenGet(ctx context.Context, id string) (switchboard.AgentToken, error)
	TokenList(ctx context.Context) ([]switchboard.AgentToken, error)
	TokenRevoke(ctx context.Context, id string, at time.Time) (switchboard.AgentToken, error)
}

// Tokens mints and checks agent tokens. A token is "sbt_<id>.<secret>":
// the id finds the row, the secret (256 random bits) is compared by its
// SHA-256, which is all the store keeps. Every check reads the store, so a
// revoke takes effect at once on every replica.
type Tokens struct {
	store TokenStore
	now   func() time.Time
}

// NewTokens returns a Tokens over store; now may be nil (time.Now).
func NewTokens(store TokenStore, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{store: store, now: now}
}

// Created is the answer to minting a token: the secret appears only here.
type Created struct {
	switchboard.AgentToken
	Token string `json:"token"`
}

var agentName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// TokenRequest is what a token is minted for: the agent's name, the tool
// names it may call (Allow minus Deny) and the panels and slots it may
// work on.
type TokenRequest struct {
	Agent string `json:"agent"`
	// User is the person the agent acts for, a principal as POST /sessions
	// names one ("user:alice" or "alice"); empty means the operator.
	User  string   `json:"user,omitempty"`
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	switchboard.PanelScope
}

// Create mints a token for an agent with the given scopes.
// OAuthAgentPrefix starts the agent name of every OAuth client acting on
// /mcp ("oauth-<client>"); operator-minted tokens may not use it.
const OAuthAgentPrefix = "oauth-"

func (t *Tokens) Create(ctx context.Context, req TokenRequest) (Created, error) {
	agent, allow, deny := req.Agent, req.Allow, req.Deny
	if !agentName.MatchString(agent) {
		return Created{}, switchboard.Errorf(switchboard.CodeInvalidInput,
			"agent name %q must be 1-64 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit", agent)
	}
	if strings.HasPrefix(agent, OAuthAgentPrefix) {
		// Those names are the agents of OAuth clients (/mcp): a token named
		// so would share their sessions and approvals.
		return Created{}, switchboard.Errorf(switchboard.CodeInvalidInput,
			"agent name %q starts with %q, which names the agents of OAuth clients; pick another name", agent, OAuthAgentPrefix)
	}
	for _, g := range append(append([]string(nil), allow...), deny...) {
		if err := CheckGlob(g); err != nil {
			return Created{}, err
		}
	}
	if err := CheckPanelScope(req.PanelScope); err != nil {
		return Created{}, err
	}
	user, err := ParseUser(req.User)
	if err != nil {
		return Created{}, err
	}
	id := randomHex(12)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // never fails on supported platforms
	token := TokenPrefix + id + "." + base64.RawURLEncoding.EncodeToString(secret)
	rec := switchboard.AgentToken{ID: id, Agent: agent, User: user, Allow: allow, Deny: deny, PanelScope: req.PanelScope, Hash: hashToken(token), CreatedAt: t.now().UTC().Truncate(time.Microsecond)}
	if err := t.store.TokenCreate(ctx, rec); err != nil {
		return Created{}, err
	}
	return Created{AgentToken: actsFor(rec), Token: token}, nil
}

// List returns every token (never a secret).
func (t *Tokens) List(ctx context.Context) ([]switchboard.AgentToken, error) {
	ts, err := t.store.TokenList(ctx)
	for i := range ts {
		ts[i] = actsFor(ts[i])
	}
	return ts, err
}

// Revoke ends a token at once; NOT_FOUND for an unknown id.
func (t *Tokens) Revoke(ctx context.Context, id string) (switchboard.AgentToken, error) {
	rec, err := t.store.TokenRevoke(ctx, id, t.now())
	return actsFor(rec), err
}

// actsFor fills the derived AgentToken.ActsFor, so a token minted without
// a user says that it acts for the operator.
func actsFor(t switchboard.AgentToken) switchboard.AgentToken {
	if t.ID != "" {
		t.ActsFor = t.Principal().ActsFor()
	}
	return t
}

// maxUserName bounds a user's id; IdP subjects are far shorter.
const maxUserName = 200

// userName is a user's id: a letter or digit, then letters, digits and
// the punctuation IdP subjects and e-mail addresses use.
var userName = regexp.MustCompile(`^[\p{L}\p{N}][\p{L}\p{N}._@+|:-]*$`)

// ParseUser checks the user a token's agent acts for and returns it as
// "user:<id>" ("" for none: the operator). It takes the forms POST
// /sessions takes ("user:alice" or "alice") and refuses another kind of
// principal (an agent or a tab cannot be acted for) with INVALID_INPUT.
func ParseUser(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	for _, k := range []switchboard.PrincipalKind{switchboard.PrincipalAgent, switchboard.PrincipalSession} {
		if strings.HasPrefix(name, string(k)+":") {
			return "", switchboard.Errorf(switchboard.CodeInvalidInput,
				"user %q is a%s %s, not a person: a token's agent acts for a user, \"user:<id>\" (e.g. \"user:alice\")", name, article(k), k)
		}
	}
	p, ok := switchboard.UserPrincipal(name)
	if !ok || len(p.ID) > maxUserName || !userName.MatchString(p.ID) {
		return "", switchboard.Errorf(switchboard.CodeInvalidInput,
			"user %q is not a user principal: write \"user:<id>\" (e.g. \"user:alice\") where <id> is 1-%d letters, digits and . _ @ + | : -, starting with a letter or digit", name, maxUserName)
	}
	return p.String(), nil
}

func article(k switchboard.PrincipalKind) string {
	if k == switchboard.PrincipalAgent {
		return "n"
	}
	return ""
}

// Authenticate returns the principal of an agent token, or UNAUTHORIZED
// (unknown, wrong or revoked token; the message does not say which).
func (t *Tokens) Authenticate(ctx context.Context, token string) (switchboard.Principal, error) {
	bad := switchboard.Errorf(switchboard.CodeUnauthorized, "the bearer token is not valid for this daemon")
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return switchboard.Principal{}, bad
	}
	id, _, ok := strings.Cut(rest, ".")
	if !ok || id == "" {
		return switchboard.Principal{}, bad
	}
	rec, err := t.store.TokenGet(ctx, id)
	if err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeNotFound {
			return switchboard.Principal{}, bad
		}
		return switchboard.Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(hashToken(token))) != 1 {
		return switchboard.Principal{}, bad
	}
	if !rec.RevokedAt.IsZero() {
		return switchboard.Principal{}, switchboard.Errorf(switchboard.CodeUnauthorized, "this agent token was revoked; ask the user for a new one")
	}
	return rec.Principal(), nil // User set: the agent acts for that person
}

// IsAgentToken reports whether a bearer looks like an agent token.
func IsAgentToken(token string) bool { return strings.HasPrefix(token, TokenPrefix) }

func hashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
