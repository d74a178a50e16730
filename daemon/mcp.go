package daemon

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/mcpserver"
	"github.com/switchboardhq/switchboard/scope"
	"github.com/switchboardhq/switchboard/session"
)

// newMCP builds the MCP server mounted at /mcp.
func (d *Daemon) newMCP(ctx context.Context, opts Options) (*mcpserver.Server, error) {
	o := opts.MCP
	o.Logger = d.log
	o.Authenticate = authenticator(opts.AdminToken, d.Tokens)
	// Live tabs' browser tools are listed beside the catalog, and a tab
	// advertising or going away sends list_changed.
	if o.Live == nil {
		o.Live = d.Sessions
	}
	return mcpserver.New(ctx, d.Registry, d.Broker, &o)
}

// authenticator turns a request's bearer token into its principal: the
// one place /mcp learns who calls. The admin token is the user; an agent
// token (tokens may be nil) is its agent with its scopes.
func authenticator(adminToken string, tokens *scope.Tokens) func(*http.Request) (switchboard.Principal, error) {
	return func(r *http.Request) (switchboard.Principal, error) {
		h := r.Header.Get("Authorization")
		const prefix = "Bearer "
		if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
			return switchboard.Principal{}, switchboard.Errorf(switchboard.CodeUnauthorized,
				"missing Authorization: Bearer token; the admin token is in <data>/admin.token")
		}
		tok := strings.TrimSpace(h[len(prefix):])
		if tokens != nil && scope.IsAgentToken(tok) {
			return tokens.Authenticate(r.Context(), tok)
		}
		if subtle.ConstantTimeCompare([]byte(tok), []byte(adminToken)) != 1 {
			return switchboard.Principal{}, switchboard.Errorf(switchboard.CodeUnauthorized, "the bearer token is not valid for this daemon")
		}
		return switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}, nil
	}
}

var _ mcpserver.Live = (*session.Manager)(nil)
