package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client/tokenexchange"
	"github.com/zitadel/oidc/v3/pkg/oidc"

	"github.com/switchboardhq/switchboard"
)

// ExchangerOptions configure an Exchanger.
type ExchangerOptions struct {
	// Issuer is the identity provider whose access tokens callers present
	// (the daemon's --oauth-issuer); its token endpoint is discovered.
	Issuer string
	// ClientID and ClientSecret authenticate the daemon at the provider
	// (HTTP Basic, client_secret_basic): the client the provider allows to
	// exchange its users' tokens.
	ClientID, ClientSecret string
	// HTTPClient reaches the provider; nil is a client with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Exchanger trades a caller's access token for one the provider issues to
// a backend's audience (RFC 8693 token exchange), with zitadel/oidc's
// token-exchange client: the backend then sees the provider's own token
// for the same user, and applies its own permissions to it. Exchanged
// tokens are kept until shortly before they expire, so a busy agent does
// not cost the provider a request per call. Safe for concurrent use.
type Exchanger struct {
	te  tokenexchange.TokenExchanger
	now func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]exchanged
}

type exchanged struct {
	token string
	until time.Time
}

// exchangeCacheMax bounds the tokens kept; past it the cache starts over.
const exchangeCacheMax = 10_000

// exchangeMargin is how long before its expiry a kept token is no longer
// handed out: it must outlive the backend request it goes with.
const exchangeMargin = 30 * time.Second

// NewExchanger discovers the provider's token endpoint; a provider that
// cannot be reached fails here, at start, not at the first call.
func NewExchanger(ctx context.Context, o ExchangerOptions) (*Exchanger, error) {
	if o.Issuer == "" || o.ClientID == "" || o.ClientSecret == "" {
		return nil, errors.New("token exchange needs the issuer, a client id and its secret")
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	te, err := tokenexchange.NewTokenExchangerClientCredentials(ctx, o.Issuer, o.ClientID, o.ClientSecret, tokenexchange.WithHTTPClient(hc))
	if err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Exchanger{te: te, now: o.Now, cache: map[[32]byte]exchanged{}}, nil
}

// Exchange returns an access token for the subject token's user, issued
// to x.Audience with x.Scopes. A refusal by the provider is UNAUTHORIZED
// when it is about the caller's token (expired, revoked, not the
// provider's), TOOL_UNAVAILABLE when it is about the daemon's client, and
// UNAVAILABLE when the provider cannot be reached.
func (e *Exchanger) Exchange(ctx context.Context, subject string, x switchboard.TokenExchange) (string, error) {
	key := sha256.Sum256([]byte(subject + "\x00" + x.Audience + "\x00" + strings.Join(x.Scopes, " ")))
	now := e.now()
	e.mu.Lock()
	if c, ok := e.cache[key]; ok && now.Before(c.until) {
		e.mu.Unlock()
		return c.token, nil
	}
	e.mu.Unlock()
	res, err := tokenexchange.ExchangeToken(ctx, e.te, subject, oidc.AccessTokenType, "", "",
		nil, []string{x.Audience}, x.Scopes, oidc.AccessTokenType)
	if err != nil {
		return "", exchangeError(err)
	}
	if res.AccessToken == "" || !strings.EqualFold(res.TokenType, oidc.BearerToken) {
		return "", switchboard.Errorf(switchboard.CodeUpstreamError,
			"the identity provider's token exchange answered without a bearer access token (token_type %q)", res.TokenType)
	}
	if res.ExpiresIn > 0 {
		until := now.Add(time.Duration(res.ExpiresIn)*time.Second - exchangeMargin)
		e.mu.Lock()
		if len(e.cache) >= exchangeCacheMax {
			clear(e.cache)
		}
		e.cache[key] = exchanged{res.AccessToken, until}
		e.mu.Unlock()
	}
	return res.AccessToken, nil
}

// exchangeError codes a failed exchange by who must act on it.
func exchangeError(err error) error {
	var oe *oidc.Error
	if errors.As(err, &oe) {
		switch oe.ErrorType {
		case oidc.InvalidClient, oidc.UnauthorizedClient:
			return switchboard.Errorf(switchboard.CodeToolUnavailable,
				"the identity provider refused the daemon's token-exchange client (%s): check --oauth-exchange-client and $SWITCHBOARD_OAUTH_EXCHANGE_SECRET, and that the provider lets that client exchange tokens", oe.ErrorType)
		case oidc.InvalidGrant, oidc.InvalidRequest, oidc.AccessDenied, oidc.InvalidScope, oidc.InvalidTarget:
			return switchboard.Errorf(switchboard.CodeUnauthorized,
				"the identity provider would not exchange the caller's token for this backend (%s: %s); sign in again, or ask the provider's administrator to allow this audience", oe.ErrorType, oe.Description)
		}
		return switchboard.Errorf(switchboard.CodeUpstreamError, "the identity provider's token exchange failed: %s: %s", oe.ErrorType, oe.Description)
	}
	return switchboard.Errorf(switchboard.CodeUnavailable, "could not reach the identity provider to exchange the caller's token: %v", err)
}
