package oauthas

// The console client: switchboard's own console is a built-in public
// client of this server, so a person of the host app signs in to it the
// way they sign in an MCP client — through the host app, with PKCE, a
// consent page and a grant they can revoke — and sees only their own
// records. Its tokens are for the HTTP API (Options.APIResource), not for
// /mcp: a console token is the person, never an agent acting for them,
// and /mcp's audience check refuses it.

// ConsoleClientID is the console's client_id. It needs no registration;
// its one redirect URI is Issuer + ConsolePath.
const ConsoleClientID = "switchboard-console"

// ConsoleScope is the scope of console tokens: see and manage one's own
// approvals, agents, grants, runs and ledger entries.
const ConsoleScope = "console"

// ConsolePath is where the console is served.
const ConsolePath = "/console/"

// consoleName is the console's name on the consent page and in grants.
const consoleName = "switchboard console"

// consoleClient is the built-in console client, or nil when the server
// has no API resource to issue its tokens for.
func (s *Server) consoleClient() *client {
	if s.apiResource == "" {
		return nil
	}
	return &client{id: ConsoleClientID, data: clientData{Name: consoleName,
		RedirectURIs: []string{s.issuer + ConsolePath}, Builtin: true}, s: s}
}

// audienceOf is the resource a client's tokens are for and the scope
// they carry: the console's, or /mcp's for every other client.
func (s *Server) audienceOf(clientID string) (resource, scope string) {
	if clientID == ConsoleClientID && s.apiResource != "" {
		return s.apiResource, ConsoleScope
	}
	return s.resource, s.scope
}

// APIResource is the audience of console tokens ("" without one).
func (s *Server) APIResource() string { return s.apiResource }

// scopesSupported are the scopes the metadata names: /mcp's, and the
// console's when there is a console client.
func (s *Server) scopesSupported() []string {
	if s.apiResource == "" {
		return []string{s.scope}
	}
	return []string{s.scope, ConsoleScope}
}
