package oauthas

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/oauth"
)

// Lifetimes of what the server issues.
const (
	requestLifetime = 10 * time.Minute // from /authorize to consent
	ticketLifetime  = 5 * time.Minute  // the host's one-time consent URL
	codeLifetime    = 2 * time.Minute
)

// request is an authorization request as kept in the store: what the
// client asked for, and, once the host vouched and the user approved,
// who and under which grant.
type request struct {
	ID            string    `json:"id"`
	ClientID      string    `json:"clientId"`
	RedirectURI   string    `json:"redirectUri"`
	State         string    `json:"state,omitempty"`
	Nonce         string    `json:"nonce,omitempty"`
	Scopes        []string  `json:"scopes"`
	ResponseMode  string    `json:"responseMode,omitempty"`
	Challenge     string    `json:"challenge"`
	User          string    `json:"user,omitempty"`
	SignedInAt    time.Time `json:"signedInAt,omitzero"`
	Approved      bool      `json:"approved,omitempty"`
	Grant         string    `json:"grant,omitempty"`
	Expires       time.Time `json:"expires"`
	ResourceURL   string    `json:"resource"`
	RequiredScope string    `json:"requiredScope"`
}

func (a *request) GetID() string         { return a.ID }
func (a *request) GetACR() string        { return "" }
func (a *request) GetAMR() []string      { return nil }
func (a *request) GetAudience() []string { return []string{a.ResourceURL} }
func (a *request) GetAuthTime() time.Time {
	return a.SignedInAt
}
func (a *request) GetClientID() string { return a.ClientID }
func (a *request) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: a.Challenge, Method: oidc.CodeChallengeMethodS256}
}
func (a *request) GetNonce() string                     { return a.Nonce }
func (a *request) GetRedirectURI() string               { return a.RedirectURI }
func (a *request) GetResponseType() oidc.ResponseType   { return oidc.ResponseTypeCode }
func (a *request) GetResponseMode() oidc.ResponseMode   { return oidc.ResponseMode(a.ResponseMode) }
func (a *request) GetScopes() []string                  { return a.Scopes }
func (a *request) GetState() string                     { return a.State }
func (a *request) GetSubject() string                   { return a.User }
func (a *request) Done() bool                           { return a.Approved && a.User != "" && a.Grant != "" }
func (a *request) expired(now time.Time) bool           { return now.After(a.Expires) }
func (a *request) grantID() string                      { return a.Grant }
func (a *request) scopesShown(required string) []string { return shownScopes(a.Scopes, required) }

// refreshRequest is a refresh token's grant, for the op's refresh flow.
type refreshRequest struct {
	grant    grant
	scopes   []string
	resource string
}

func (r *refreshRequest) GetAMR() []string       { return nil }
func (r *refreshRequest) GetAudience() []string  { return []string{r.resource} }
func (r *refreshRequest) GetAuthTime() time.Time { return r.grant.CreatedAt }
func (r *refreshRequest) GetClientID() string    { return r.grant.Client }
func (r *refreshRequest) GetScopes() []string    { return r.scopes }
func (r *refreshRequest) GetSubject() string     { return r.grant.User }
func (r *refreshRequest) grantID() string        { return r.grant.ID }

// SetCurrentScopes takes the scopes a refresh asked for (the op has
// checked they are among the token's). A tools: scope narrows rather than
// grants, so a request that drops every one of them would widen the
// token to every tool: the token's own tools: scopes are kept then.
func (r *refreshRequest) SetCurrentScopes(s []string) {
	isTools := func(x string) bool { return strings.HasPrefix(x, "tools:") }
	if !slices.ContainsFunc(s, isTools) {
		s = slices.Concat(s, slices.DeleteFunc(slices.Clone(r.scopes), func(x string) bool { return !isTools(x) }))
	}
	r.scopes = s
}

// clientIDKey carries a token request's client_id from the token
// endpoint to TokenRequestByRefreshToken, which the op calls with the
// token only.
type clientIDKey struct{}

// resourceKey carries the authorize request's RFC 8707 resource values
// from the HTTP wrapper to CreateAuthRequest.
type resourceKey struct{}

// storage implements op.Storage over the daemon's store.
type storage struct{ s *Server }

var _ op.Storage = storage{}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func randomID(prefix string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// CreateAuthRequest keeps a validated authorization request. The op has
// checked the client, the redirect URI and the scopes; this adds what
// OAuth 2.1 and the MCP spec ask beyond it: PKCE with S256 only, and a
// resource, if named, that is this server's /mcp.
func (st storage) CreateAuthRequest(ctx context.Context, r *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	s := st.s
	if r.CodeChallenge == "" {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE is required: send code_challenge with code_challenge_method=S256")
	}
	if r.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("code_challenge_method must be S256 (plain is not accepted)")
	}
	resource, required := s.audienceOf(r.ClientID)
	if rs, _ := ctx.Value(resourceKey{}).([]string); len(rs) > 0 {
		for _, res := range rs {
			if strings.TrimSuffix(res, "/") != strings.TrimSuffix(resource, "/") {
				return nil, (&oidc.Error{ErrorType: "invalid_target"}).WithDescription("this server issues this client tokens for %s only, not %q", resource, res)
			}
		}
	}
	if r.ResponseMode != "" && r.ResponseMode != oidc.ResponseModeQuery {
		return nil, oidc.ErrInvalidRequest().WithDescription("response_mode must be query")
	}
	scopes := slices.DeleteFunc(slices.Clone(r.Scopes), func(x string) bool {
		return x != required && (required == ConsoleScope || !strings.HasPrefix(x, "tools:"))
	})
	if !slices.Contains(scopes, required) {
		scopes = append([]string{required}, scopes...) // a token always carries its resource's scope
	}
	now := s.now()
	a := &request{ID: randomID("sbr_"), ClientID: r.ClientID, RedirectURI: r.RedirectURI, State: r.State, Nonce: r.Nonce,
		Scopes: scopes, ResponseMode: string(r.ResponseMode), Challenge: r.CodeChallenge, Expires: now.Add(requestLifetime),
		ResourceURL: resource, RequiredScope: required}
	data, _ := json.Marshal(a)
	if err := s.store.OAuthPut(ctx, switchboard.OAuthRecord{Kind: switchboard.OAuthRequest, ID: a.ID, Client: a.ClientID,
		Data: data, CreatedAt: now, ExpiresAt: a.Expires}); err != nil {
		return nil, err
	}
	// Expired requests, tickets, codes, refresh tokens and keys go now
	// and then: every new request is a fine moment.
	if _, err := s.store.OAuthDeleteExpired(ctx, now.Add(-time.Minute)); err != nil {
		s.log.WarnContext(ctx, "OAuth: removing expired records failed", "err", err)
	}
	return a, nil
}

func (st storage) loadRequest(ctx context.Context, id string) (*request, switchboard.OAuthRecord, error) {
	rec, err := st.s.store.OAuthGet(ctx, switchboard.OAuthRequest, id)
	if err != nil {
		return nil, rec, err
	}
	var a request
	if err := json.Unmarshal(rec.Data, &a); err != nil {
		return nil, rec, err
	}
	if a.expired(st.s.now()) {
		return nil, rec, switchboard.Errorf(switchboard.CodeNotFound, "the sign-in request %s has expired; start again from the MCP client", id)
	}
	return &a, rec, nil
}

func (st storage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	a, _, err := st.loadRequest(ctx, id)
	if err != nil {
		return nil, oidc.ErrInvalidRequest().WithDescription("unknown or expired authorization request").WithParent(err)
	}
	return a, nil
}

// AuthRequestByCode uses the code up: a second exchange of it (a replay,
// on this replica or another) fails, and revokes the grant the first
// exchange made, as RFC 6749 §4.1.2 advises.
func (st storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s := st.s
	rec, err := s.store.OAuthUse(ctx, switchboard.OAuthCode, hashSecret(code), s.now())
	if err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeConflict {
			if a, _, lerr := st.loadRequest(ctx, rec.Ref); lerr == nil && a.Grant != "" {
				if s.revokeFor(ctx, a.Grant, "a replayed authorization code") {
					s.log.WarnContext(ctx, "OAuth authorization code replayed; its grant is revoked", "grant", a.Grant, "client", a.ClientID)
				}
			}
			return nil, oidc.ErrInvalidGrant().WithDescription("the authorization code was used already; its grant is revoked, start the authorization again")
		}
		if switchboard.CodeOf(err) == switchboard.CodeNotFound {
			return nil, oidc.ErrInvalidGrant().WithDescription("unknown authorization code; start the authorization again")
		}
		return nil, oidc.ErrServerError().WithParent(err)
	}
	if s.now().After(rec.ExpiresAt) {
		return nil, oidc.ErrInvalidGrant().WithDescription("the authorization code has expired (codes last %s); start the authorization again", codeLifetime)
	}
	a, _, err := st.loadRequest(ctx, rec.Ref)
	if err != nil {
		return nil, oidc.ErrInvalidGrant().WithDescription("the authorization request of this code has expired; start the authorization again").WithParent(err)
	}
	if !a.Done() {
		return nil, oidc.ErrInvalidGrant().WithDescription("the authorization request was not approved")
	}
	return a, nil
}

// SaveAuthCode keeps the code's hash; a request gets one code only (the
// request is used up by it), however often its callback is called.
func (st storage) SaveAuthCode(ctx context.Context, id, code string) error {
	s := st.s
	if _, err := s.store.OAuthUse(ctx, switchboard.OAuthRequest, id, s.now()); err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeConflict {
			return oidc.ErrInvalidRequest().WithDescription("a code was issued for this authorization request already; start again from the MCP client")
		}
		return err
	}
	now := s.now()
	return s.store.OAuthPut(ctx, switchboard.OAuthRecord{Kind: switchboard.OAuthCode, ID: hashSecret(code), Ref: id,
		CreatedAt: now, ExpiresAt: now.Add(codeLifetime)})
}

// DeleteAuthRequest keeps the request until it expires: a replayed code
// must still find the grant to revoke.
func (st storage) DeleteAuthRequest(context.Context, string) error { return nil }

func (st storage) CreateAccessToken(ctx context.Context, tr op.TokenRequest) (string, time.Time, error) {
	g, ok := tr.(grantOf)
	if !ok {
		return "", time.Time{}, oidc.ErrUnsupportedGrantType()
	}
	gr, err := st.s.liveGrant(ctx, g.grantID())
	if err != nil {
		return "", time.Time{}, grantRefusal(err)
	}
	return gr.ID + "." + rand.Text(), st.s.now().Add(st.s.accessLifetime), nil
}

// grantOf is the grant a token request is made under.
type grantOf interface{ grantID() string }

// CreateAccessAndRefreshTokens issues under a live grant only: the access
// token's jti starts with the grant's id (CheckToken reads it), and a new
// refresh token replaces the one presented (already used up by
// TokenRequestByRefreshToken).
func (st storage) CreateAccessAndRefreshTokens(ctx context.Context, tr op.TokenRequest, _ string) (string, string, time.Time, error) {
	s := st.s
	g, ok := tr.(grantOf)
	if !ok {
		return "", "", time.Time{}, oidc.ErrUnsupportedGrantType()
	}
	gr, err := s.liveGrant(ctx, g.grantID())
	if err != nil {
		return "", "", time.Time{}, grantRefusal(err)
	}
	now := s.now()
	refresh := rand.Text() + rand.Text()
	data, _ := json.Marshal(refreshData{Scopes: tr.GetScopes()})
	if err := s.store.OAuthPut(ctx, switchboard.OAuthRecord{Kind: switchboard.OAuthRefresh, ID: hashSecret(refresh), Ref: gr.ID,
		User: gr.User, Client: gr.Client, Data: data, CreatedAt: now, ExpiresAt: now.Add(s.refreshLifetime)}); err != nil {
		return "", "", time.Time{}, err
	}
	return gr.ID + "." + rand.Text(), refresh, now.Add(s.accessLifetime), nil
}

type refreshData struct {
	Scopes []string `json:"scopes"`
}

// TokenRequestByRefreshToken uses the refresh token up (rotation). A
// refresh token of a grant that is revoked or gone is refused as such,
// whether it was used or not: the client is told to authorize again, and
// nothing is recorded, since its grant ended already. A used one of a
// live grant presented again means it leaked: the grant is revoked (OAuth
// 2.1 §4.3.1), so neither the thief nor the client can go on.
func (st storage) TokenRequestByRefreshToken(ctx context.Context, token string) (op.RefreshTokenRequest, error) {
	s := st.s
	rec, err := s.store.OAuthGet(ctx, switchboard.OAuthRefresh, hashSecret(token))
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		return nil, oidc.ErrInvalidGrant().WithDescription("unknown refresh token; authorize again")
	}
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	if id, ok := ctx.Value(clientIDKey{}).(string); ok && id != rec.Client {
		// Refused before it is used up: the client it was issued to can
		// still use it.
		return nil, oidc.ErrInvalidGrant().WithDescription("the refresh token was not issued to this client_id")
	}
	gr, err := s.liveGrant(ctx, rec.Ref)
	if err != nil {
		return nil, grantRefusal(err)
	}
	if s.now().After(rec.ExpiresAt) {
		return nil, oidc.ErrInvalidGrant().WithDescription("the refresh token has expired; authorize again")
	}
	if rec, err = s.store.OAuthUse(ctx, switchboard.OAuthRefresh, rec.ID, s.now()); err != nil {
		if switchboard.CodeOf(err) != switchboard.CodeConflict {
			return nil, oidc.ErrServerError().WithParent(err)
		}
		if s.revokeFor(ctx, rec.Ref, "a reused refresh token") {
			s.log.WarnContext(ctx, "OAuth refresh token reused; its grant is revoked", "grant", rec.Ref, "client", rec.Client)
			return nil, oidc.ErrInvalidGrant().WithDescription("the refresh token was used already; the grant is revoked, authorize again")
		}
		// Revoked by someone else since liveGrant read it.
		return nil, oidc.ErrInvalidGrant().WithDescription("the grant of this refresh token was revoked; authorize again")
	}
	var d refreshData
	_ = json.Unmarshal(rec.Data, &d)
	resource, _ := s.audienceOf(rec.Client)
	return &refreshRequest{grant: gr, scopes: d.Scopes, resource: resource}, nil
}

// grantRefusal is liveGrant's refusal as the token endpoint answers it:
// invalid_grant with the reason, or a server error.
func grantRefusal(err error) *oidc.Error {
	if errors.Is(err, errGrantEnded) {
		return oidc.ErrInvalidGrant().WithDescription("%v", err)
	}
	return oidc.ErrServerError().WithParent(err)
}

func (st storage) TerminateSession(context.Context, string, string) error { return nil }

// GetRefreshTokenInfo serves revocation: the token id handed to
// RevokeToken is its grant's.
func (st storage) GetRefreshTokenInfo(ctx context.Context, clientID, token string) (string, string, error) {
	rec, err := st.s.store.OAuthGet(ctx, switchboard.OAuthRefresh, hashSecret(token))
	if err != nil || rec.Client != clientID {
		return "", "", op.ErrInvalidRefreshToken
	}
	return rec.User, grantTokenPrefix + rec.Ref, nil
}

const grantTokenPrefix = "grant:"

// RevokeToken (RFC 7009) revokes the grant of the token: a refresh
// token's, or an access token's (its jti). A token this server does not
// know is no error (RFC 7009 §2.2); one of another client's is.
func (st storage) RevokeToken(ctx context.Context, token, _, clientID string) *oidc.Error {
	s := st.s
	id, ok := strings.CutPrefix(token, grantTokenPrefix)
	if !ok {
		id, _, ok = strings.Cut(token, ".")
		if !ok || !strings.HasPrefix(id, grantPrefix) {
			return nil
		}
	}
	rec, err := s.store.OAuthGet(ctx, switchboard.OAuthGrant, id)
	if err != nil {
		return nil
	}
	if rec.Client != clientID {
		return oidc.ErrInvalidClient().WithDescription("the token was not issued to this client")
	}
	rv, fresh, err := s.revokeGrant(ctx, id)
	if err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	if !fresh {
		return nil // revoked already: nothing changes, nothing to record
	}
	s.log.InfoContext(ctx, "OAuth grant revoked by its client", "grant", id, "client", clientID, "user", rec.User)
	s.record(ctx, "agent:"+oauth.AgentID(clientID), "oauth.revoke", grantOfRecord(rv), map[string]any{"reason": "the client revoked a token (RFC 7009)"})
	return nil
}

func (st storage) SigningKey(ctx context.Context) (op.SigningKey, error) {
	return st.s.keys.signing(ctx)
}
func (st storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.ES256}, nil
}
func (st storage) KeySet(ctx context.Context) ([]op.Key, error) { return st.s.keys.public(ctx) }

// GetClientByClientID answers the op's OAuth errors: it passes ours on
// as they are, and some of its callers would turn a plain one into a
// server_error.
func (st storage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if id == "" {
		return nil, oidc.ErrInvalidClient().WithDescription("client_id is required: clients here are public and identify themselves with client_id")
	}
	c, err := st.s.lookupClient(ctx, id)
	if errors.Is(err, errUnknownClient) {
		return nil, oidc.ErrInvalidClient().WithDescription("unknown client_id: send the client_id this server registered for you, or your client ID metadata document's URL").WithParent(err)
	}
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	return c, nil
}

// AuthorizeClientIDSecret: no client here has a secret.
func (st storage) AuthorizeClientIDSecret(context.Context, string, string) error {
	return errors.New("clients of this server are public: they use PKCE, not a secret")
}
func (st storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}
func (st storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errors.New("no userinfo here")
}
func (st storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errors.New("no introspection here")
}

// GetPrivateClaimsFromScopes puts the granted scopes in the access token
// (scope, RFC 9068), which /mcp maps to the agent's tool scope.
func (st storage) GetPrivateClaimsFromScopes(_ context.Context, _, clientID string, scopes []string) (map[string]any, error) {
	_, required := st.s.audienceOf(clientID)
	return map[string]any{"scope": strings.Join(shownScopes(scopes, required), " ")}, nil
}
func (st storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("no JWT profile clients")
}
func (st storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("no JWT profile grants")
}
func (st storage) Health(context.Context) error { return nil }

// shownScopes are the scopes that mean something here (the resource's
// and tools:), in order, without OpenID's.
func shownScopes(scopes []string, required string) []string {
	var out []string
	for _, x := range scopes {
		if (x == required || strings.HasPrefix(x, "tools:")) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// revokeFor revokes a grant the server caught misused, and records why.
// It reports whether this call revoked it: a grant revoked already (by
// its user, the operator, or another replica's alarm) is left as it is,
// with no second ledger entry.
func (s *Server) revokeFor(ctx context.Context, id, why string) bool {
	rec, fresh, err := s.revokeGrant(ctx, id)
	if err != nil {
		s.log.ErrorContext(ctx, "OAuth: revoking a misused grant failed", "grant", id, "err", err)
		return false
	}
	if fresh {
		s.record(ctx, "system", "oauth.revoke", grantOfRecord(rec), map[string]any{"reason": why})
	}
	return fresh
}

// revokeGrant revokes a grant unless it is revoked already; fresh says
// whether this call did. Two replicas revoking the same live grant at
// once may both see it live and both record it; the revocation itself
// is the same either way (the store keeps the first time).
func (s *Server) revokeGrant(ctx context.Context, id string) (rec switchboard.OAuthRecord, fresh bool, err error) {
	if rec, err = s.store.OAuthGet(ctx, switchboard.OAuthGrant, id); err != nil {
		return rec, false, err
	}
	if !rec.RevokedAt.IsZero() {
		return rec, false, nil
	}
	rec, err = s.store.OAuthRevoke(ctx, switchboard.OAuthGrant, id, s.now())
	return rec, err == nil, err
}
