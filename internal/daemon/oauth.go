package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/oauth"
	"github.com/switchboardhq/switchboard/internal/oauthas"
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
	// LoginURL is the host app's sign-in page for the embedded
	// authorization server (used when Issuer is empty): the browser is
	// sent there with ?request=<id> (docs/oauth.md, "Mode 2").
	LoginURL string
	// MetadataHTTPClient fetches client ID metadata documents for the
	// embedded server; nil refuses non-public addresses.
	MetadataHTTPClient *http.Client
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
		return d.startAuthServer(opts)
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

// startAuthServer starts the embedded authorization server (package
// oauthas): the default without an external issuer. Its issuer is the
// resource URL without its /mcp path (--public-url), and its tokens go
// through the same Verifier as an external issuer's, with its key set
// and a check of each token's grant.
func (d *Daemon) startAuthServer(opts Options) error {
	o := opts.OAuth
	issuer := strings.TrimSuffix(strings.TrimSuffix(o.Resource, "/"), "/mcp")
	as, err := oauthas.New(oauthas.Options{Store: opts.Store, Issuer: issuer, Resource: o.Resource, Scope: o.Scope,
		APIResource: issuer + "/api/v1", LoginURL: o.LoginURL, HTTPClient: o.MetadataHTTPClient, Logger: d.log, Ledger: d.ledgerOrNil()})
	if err != nil {
		return err
	}
	v, err := oauth.NewVerifier(context.Background(), oauth.VerifierOptions{
		Issuer: as.Issuer(), Resource: o.Resource, Logger: d.log, KeySet: as.KeySet(), Check: as.CheckToken,
	})
	if err != nil {
		return err
	}
	// The console's sign-ins: the same keys and grant check, the API's
	// audience, and the person as the principal.
	cv, err := oauth.NewVerifier(context.Background(), oauth.VerifierOptions{
		Issuer: as.Issuer(), Resource: as.APIResource(), Logger: d.log, KeySet: as.KeySet(), Check: as.CheckToken,
	})
	if err != nil {
		return err
	}
	d.authServer, d.oauth, d.consoleUsers = as, v, consoleUsers{cv}
	d.resource.AuthorizationServers = []string{as.Issuer()}
	return nil
}

// oauthRoutes serves the protected-resource metadata (no token needed)
// and the embedded authorization server's endpoints.
func (d *Daemon) oauthRoutes(extra map[string]http.Handler) {
	if d.resource == nil {
		return
	}
	for pattern, h := range d.resource.Routes() {
		extra[pattern] = h
	}
	if d.authServer != nil {
		for pattern, h := range d.authServer.Routes() {
			extra[pattern] = h
		}
	}
}

// oauthAPI is the embedded server's API side, or an untyped nil.
func (d *Daemon) oauthAPI() httpapi.OAuthServer {
	if d.authServer == nil {
		return nil
	}
	return d.authServer
}

// ledgerOrNil is the activity ledger as oauthas takes it, or an untyped
// nil without one.
func (d *Daemon) ledgerOrNil() oauthas.Ledger {
	if d.Ledger == nil {
		return nil
	}
	return d.Ledger
}

// consoleUsers checks the console's tokens (authn.Options.Users): issued
// to the console client with its scope, each is its user.
type consoleUsers struct{ v *oauth.Verifier }

func (c consoleUsers) Authenticate(ctx context.Context, raw string) (switchboard.Principal, []string, error) {
	t, err := c.v.Verify(ctx, raw)
	if err != nil {
		return switchboard.Principal{}, nil, err
	}
	u, ok := switchboard.UserPrincipal(t.Principal.User)
	if !oauthas.Person(t.ClientID) || !slices.Contains(t.Scopes, oauthas.ConsoleScope) || !ok {
		return switchboard.Principal{}, nil, switchboard.Errorf(switchboard.CodeUnauthorized,
			"the access token is not valid for this resource: only the console's sign-ins are tokens for the HTTP API")
	}
	return u, t.Scopes, nil
}
