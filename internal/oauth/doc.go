// Package oauth makes /mcp an OAuth 2.1 protected resource, as the MCP
// authorization specification (2025-11-25) asks: it publishes the
// resource's metadata (RFC 9728), words the WWW-Authenticate challenges of
// 401 and 403 answers (RFC 6750), and verifies access tokens that an
// external OpenID Connect issuer signed (JWTs checked against the issuer's
// discovered JWKS, audience-bound to the resource) and turns them into the
// agent principal that acts for the signed-in user.
//
// The daemon (the composition root) builds a Resource and, with
// --oauth-issuer, a Verifier; authn hands verified tokens to the
// transports as credentials of kind authn.OAuth; mcpserver decides that
// /mcp takes them and words its refusals with Challenge.
//
// docs/oauth.md is the operator's side: the modes, the claim and scope
// mappings, and configuration for a hosted IdP.
package oauth
