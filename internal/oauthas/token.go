package oauthas

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// token serves the token endpoint with the op's own parsing, client
// authentication, PKCE and refresh-token checks (op.ValidateAccessToken
// Request, op.ValidateRefreshTokenRequest) and its JWT signing
// (op.CreateJWT), but answers itself, for three reasons the op's
// CodeExchange and RefreshTokenExchange do not allow:
//   - no ID token: this server signs MCP clients in for /mcp, not users
//     into the client (openid is not a scope here), and the op would
//     always add one;
//   - refresh tokens without offline_access: every grant here refreshes,
//     and the op hands out a refresh token only when offline_access is in
//     the granted scopes, which it then reports in "scope";
//   - every refusal carries an error_description a person can act on
//     (the op replaces ours with a bare invalid_grant), and is logged
//     through this server's logger, not the process-wide one.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "the token request cannot be parsed"})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "invalid_request", "error_description": "send token requests with POST"})
		return
	}
	// RFC 8707 §2.2: tokens here are for /mcp only (the console's, for
	// the API only).
	resource, _ := s.audienceOf(r.PostForm.Get("client_id"))
	for _, res := range r.PostForm["resource"] {
		if strings.TrimSuffix(res, "/") != strings.TrimSuffix(resource, "/") {
			s.refuse(w, r, (&oidc.Error{ErrorType: oidc.InvalidTarget}).WithDescription("this server issues this client tokens for %s only", resource), "")
			return
		}
	}
	ctx := op.ContextWithIssuer(r.Context(), s.issuer)
	r = r.WithContext(context.WithValue(ctx, clientIDKey{}, r.PostForm.Get("client_id")))
	var (
		resp *oidc.AccessTokenResponse
		err  error
		// fallback is the description of a refusal the op made without one.
		fallback string
	)
	switch gt := r.PostForm.Get("grant_type"); gt {
	case string(oidc.GrantTypeCode):
		fallback = "the authorization code was not issued to this client_id; start the authorization again"
		resp, err = s.exchangeCode(r)
	case string(oidc.GrantTypeRefreshToken):
		fallback = "the refresh token was not issued to this client_id"
		resp, err = s.exchangeRefresh(r)
	case "":
		err = oidc.ErrInvalidRequest().WithDescription("grant_type is required: authorization_code or refresh_token")
	default:
		err = oidc.ErrUnsupportedGrantType().WithDescription("grant_type %q is not supported here: use authorization_code or refresh_token", gt)
	}
	if err != nil {
		s.refuse(w, r, err, fallback)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// verifierPattern is RFC 7636 §4.1's code_verifier.
var verifierPattern = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

func (s *Server) exchangeCode(r *http.Request) (*oidc.AccessTokenResponse, error) {
	tr, err := op.ParseAccessTokenRequest(r, s.provider.Decoder())
	if err != nil {
		return nil, err
	}
	if tr.Code == "" {
		return nil, oidc.ErrInvalidRequest().WithDescription("code is required with grant_type=authorization_code")
	}
	if tr.CodeVerifier != "" && !verifierPattern.MatchString(tr.CodeVerifier) {
		// A short verifier would let whoever intercepts the code guess it.
		return nil, oidc.ErrInvalidRequest().WithDescription("code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_' and '~' (RFC 7636 §4.1)")
	}
	req, client, err := op.ValidateAccessTokenRequest(r.Context(), tr, s.provider)
	if err != nil {
		return nil, err
	}
	return s.issue(r.Context(), req, client, "")
}

func (s *Server) exchangeRefresh(r *http.Request) (*oidc.AccessTokenResponse, error) {
	tr, err := op.ParseRefreshTokenRequest(r, s.provider.Decoder())
	if err != nil {
		return nil, err
	}
	req, client, err := op.ValidateRefreshTokenRequest(r.Context(), tr, s.provider)
	if err != nil {
		return nil, err
	}
	return s.issue(r.Context(), req, client, tr.RefreshToken)
}

// issue makes the access token (a JWT the op signs) and the next refresh
// token under the request's grant. scope lists what the token carries:
// the resource's scope and any tools: narrowing.
func (s *Server) issue(ctx context.Context, tr op.TokenRequest, client op.Client, refreshToken string) (*oidc.AccessTokenResponse, error) {
	st := storage{s}
	_, required := s.audienceOf(client.GetID())
	id, refresh, exp, err := st.CreateAccessAndRefreshTokens(ctx, tr, refreshToken)
	if err != nil {
		return nil, err
	}
	access, err := op.CreateJWT(ctx, s.issuer, tr, exp, id, client, st)
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	return &oidc.AccessTokenResponse{AccessToken: access, RefreshToken: refresh, TokenType: oidc.BearerToken,
		ExpiresIn: uint64(max(exp.Sub(s.now()).Seconds(), 0)), Scope: shownScopes(tr.GetScopes(), required)}, nil
}

// defaultDescriptions say what to do about a refusal that came with no
// description of its own.
var defaultDescriptions = map[string]string{
	string(oidc.InvalidClient):      "unknown client_id: send the client_id this server registered for you, or your client ID metadata document's URL",
	string(oidc.InvalidRequest):     "the token request is malformed",
	string(oidc.InvalidScope):       "scope may only narrow what the grant allows",
	string(oidc.UnauthorizedClient): "this client may not use that grant type",
	string(oidc.ServerError):        "the server failed to answer; retry, and if it persists ask the operator to look at the daemon's log",
}

// refuse answers an OAuth error (RFC 6749 §5.2) with the most specific
// description found in err's chain (the storage's reason, which the op
// wraps in a bare error of its own), else fallback, else one by error
// type; and logs it. A server error's cause is logged, never sent.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error, fallback string) {
	e := oidc.DefaultToServerError(err, "")
	desc := ""
	for x := error(e); x != nil; x = errors.Unwrap(x) {
		oe, ok := x.(*oidc.Error)
		if !ok {
			continue
		}
		if oe.ErrorType == oidc.ServerError {
			// The op wraps every storage error of a refresh in
			// invalid_grant, which tells a client to drop its tokens; a
			// failure of ours must not.
			e = oidc.ErrServerError().WithParent(err)
			break
		}
		if oe.Description != "" {
			desc = oe.Description // the innermost wins: it is the most specific
		}
	}
	switch {
	case e.ErrorType == oidc.ServerError:
		desc = defaultDescriptions[string(oidc.ServerError)]
	case desc == "" && e.ErrorType == oidc.InvalidGrant:
		desc = fallback
	}
	if desc == "" {
		desc = defaultDescriptions[string(e.ErrorType)]
	}
	if desc == "" {
		desc = "the token request was refused"
	}
	status := http.StatusBadRequest
	switch e.ErrorType {
	case oidc.InvalidClient:
		status = http.StatusUnauthorized
	case oidc.ServerError:
		status = http.StatusInternalServerError
	}
	attrs := []any{"error", string(e.ErrorType), "reason", desc, "grant_type", r.PostForm.Get("grant_type"), "client", r.PostForm.Get("client_id")}
	if e.ErrorType == oidc.ServerError {
		s.log.ErrorContext(r.Context(), "OAuth token request failed", append(attrs, "err", err.Error())...)
	} else {
		s.log.WarnContext(r.Context(), "OAuth token request refused", attrs...)
	}
	writeJSON(w, status, map[string]string{"error": string(e.ErrorType), "error_description": desc})
}
