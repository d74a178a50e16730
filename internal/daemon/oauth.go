package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/oauth"
)

// OAuthOptions makes /mcp an OAuth 2.1 protected resource (package oauth,
// docs/oauth.md).
type OAuthOptions struct {
	// Resource is the absolute URL clients reach /mcp at
	// (https://app.example.com/mcp): the resource identifier published in
	// the metadata and required in access tokens' aud. Empty: /mcp is no
	// OAuth resource (no metadata; admin and agent tokens only).
	Resource string
	// Issuer is an external OpenID Connect issuer whose JWT access tokens
	// /mcp takes (serve --oauth-issuer).
	Issuer string
	// UserClaim names the token claim that says which user the agent acts
	// for (oauth.DefaultUserClaim, "sub", when empty).
	UserClaim string
	// Scope is the OAuth scope /mcp requires (oauth.DefaultScope when
	// empty).
	Scope string
	// HTTPClient reaches the issuer; nil is http.DefaultClient.
	HTTPClient *http.Client
	// ExchangeClientID and ExchangeClientSecret are the daemon's client at
	// Issuer for RFC 8693 token exchange (bindings with tokenExchange);
	// empty: no exchange.
	ExchangeClientID, ExchangeClientSecret string
}

// startExchange builds the token exchanger bindings with tokenExchange
// use, discovering the issuer's token endpoint now.
func (d *Daemon) startExchange(ctx context.Context, opts Options, bo *broker.Options) error {
	o := opts.OAuth
	if o.ExchangeClientID == "" && o.ExchangeClientSecret == "" {
		return nil
	}
	if o.Issuer == "" || o.ExchangeClientID == "" || o.ExchangeClientSecret == "" {
		return errors.New("daemon: token exchange needs OAuthOptions.Issuer, ExchangeClientID and ExchangeClientSecret (serve --oauth-issuer, --oauth-exchange-client and $SWITCHBOARD_OAUTH_EXCHANGE_SECRET)")
	}
	x, err := oauth.NewExchanger(ctx, oauth.ExchangerOptions{Issuer: o.Issuer, ClientID: o.ExchangeClientID,
		ClientSecret: o.ExchangeClientSecret, HTTPClient: o.HTTPClient})
	if err != nil {
		return fmt.Errorf("daemon: token exchange at %s: %w", o.Issuer, err)
	}
	bo.Exchange = x.Exchange
	return nil
}

// startOAuth builds /mcp's protected-resource description and, with an
// issuer, the verifier of its tokens (discovering the issuer now, so a
// wrong URL fails serve at start rather than every client later).
func (d *Daemon) startOAuth(ctx context.Context, opts Options) error {
	o := opts.OAuth
	if o.Resource == "" {
		if o.Issuer != "" {
			return errors.New("daemon: OAuthOptions.Issuer needs Resource, the URL clients reach /mcp at (serve --public-url)")
		}
		return nil
	}
	if _, err := oauth.ParseResource(o.Resource); err != nil {
		return err
	}
	d.resource = &oauth.Resource{URL: o.Resource, Scope: o.Scope}
	if o.Issuer == "" {
		return nil
	}
	v, err := oauth.NewVerifier(ctx, oauth.VerifierOptions{
		Issuer: o.Issuer, Resource: o.Resource, UserClaim: o.UserClaim, HTTPClient: o.HTTPClient, Logger: d.log,
	})
	if err != nil {
		return err
	}
	d.oauth = v
	d.resource.AuthorizationServers = []string{o.Issuer}
	return nil
}

// oauthRoutes serves the protected-resource metadata (no token needed).
func (d *Daemon) oauthRoutes(extra map[string]http.Handler) {
	if d.resource == nil {
		return
	}
	for pattern, h := range d.resource.Routes() {
		extra[pattern] = h
	}
}
