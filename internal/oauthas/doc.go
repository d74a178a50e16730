// Package oauthas is the embedded OAuth 2.1 authorization server: with no
// external issuer (serve without --oauth-issuer), switchboard itself signs
// MCP clients in for the app's users, so one machine with no IdP gets the
// MCP authorization flow.
//
// It is zitadel/oidc's OpenID provider (pkg/op), which does the protocol:
// authorization code with PKCE, client authentication, refresh,
// revocation (RFC 7009) and JWT access tokens. The token endpoint runs
// the op's own validation and signing functions but answers itself (see
// Server.token): no ID token, refresh tokens without offline_access, and
// an error_description on every refusal. The op logs only through
// slog's process-wide default, which the command (not this package)
// points at the daemon's logger. This package supplies what the
// library leaves to its user: the storage (every record in the daemon's
// store, so every replica sees the same requests, codes, grants and
// keys), the clients (dynamic registration, RFC 7591, and client ID
// metadata documents, as the MCP 2025-11-25 authorization spec orders
// them), the RFC 8414 metadata, S256-only PKCE and resource indicators
// (RFC 8707: every token's audience is the /mcp resource URL), and the
// sign-in: users are never asked for a password here. The authorize
// endpoint sends the browser to the host app's sign-in URL with a request
// id; the host's backend, which knows its signed-in user, vouches for
// that user with the admin token (SignIn) and sends the browser to the
// one-time consent URL it gets back; the consent page shows the client,
// the user and the scope, and approving makes a grant and the code.
//
// A grant is the user's consent to one client. Its access tokens (15
// minutes) carry its id in jti and are checked against it on every call
// (CheckToken), and its refresh tokens rotate: revoking the grant (the
// user, the operator, or RFC 7009 revocation of any of its tokens) stops
// the next call on every replica.
//
// Grants made, denied and revoked are recorded in the activity ledger
// (oauth.grant, oauth.deny, oauth.revoke).
//
// docs/oauth.md ("Mode 2") is the operator's side.
package oauthas
