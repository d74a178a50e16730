package oauthas

// The console's and the CLI's clients: switchboard's own console is a built-in public
// client of this server, so a person of the host app signs in to it the
// way they sign in an MCP client — through the host app, with PKCE, a
// consent page and a grant they can revoke — and sees only their own
// records. Its tokens are for the HTTP API (Options.APIResource), not for
// /mcp: a console token is the person, never an agent acting for them,
// and /mcp's audience check refuses it.

// ConsoleClientID is the console's client_id. It needs no registration;
// its one redirect URI is Issuer + ConsolePath.
const ConsoleClientID = "switchboard-console"

// CLIClientID is the command line's client_id (switchboard login): a
// native app, redirected to a loopback port it picks (RFC 8252 §7.3), with
// the console's audience and scope — the person, at their terminal.
const CLIClientID = "switchboard-cli"

// CLIRedirect is the CLI's redirect URI; any port of it is accepted.
const CLIRedirect = "http://127.0.0.1/callback"

// ConsoleScope is the scope of console tokens: see and manage one's own
// approvals, agents, grants, runs and ledger entries.
const ConsoleScope = "console"

// ConsolePath is where the console is served.
const ConsolePath = "/console/"

// consoleName is the console's name on the consent page and in grants.
const consoleName = "switchboard console"

// Person reports whether clientID is one of the built-in clients whose
// tokens stand for the person themself (the console's and the CLI's).
func Person(clientID string) bool { return clientID == ConsoleClientID || clientID == CLIClientID }

// builtinClient is the console's or the CLI's client, or nil when id is
// neither or the server has no API resource to issue their tokens for.
func (s *Server) builtinClient(id string) *client {
	if s.apiResource == "" {
		return nil
	}
	switch id {
	case ConsoleClientID:
		return &client{id: id, data: clientData{Name: consoleName, RedirectURIs: []string{s.issuer + ConsolePath}, Builtin: true}, s: s}
	case CLIClientID:
		return &client{id: id, data: clientData{Name: "switchboard command line", RedirectURIs: []string{CLIRedirect}, Builtin: true}, s: s}
	}
	return nil
}

// audienceOf is the resource a client's tokens are for and the scope
// they carry: the built-in clients' (the person, on the HTTP API), or
// /mcp's for every other client.
func (s *Server) audienceOf(clientID string) (resource, scope string) {
	if Person(clientID) && s.apiResource != "" {
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
