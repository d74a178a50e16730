package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// ToolScopePrefix starts an OAuth scope that narrows which tools a token
// may call: "tools:tasks.*" allows the tools matching the glob tasks.*
// (scope.Match). A token with none may call every tool its user may.
const ToolScopePrefix = "tools:"

// maxAgentID is the agent-name limit of scope.Tokens.
const maxAgentID = 64

// AgentID is the agent principal's ID for an OAuth client: "oauth-" and
// the client id, lower-cased, with every character outside the agent-name
// grammar (a-z, 0-9, '.', '_', '-') replaced; a client id that had to
// change (a URL, as client ID metadata documents use) or is too long
// gets a short hash of the original, so two clients never share an ID.
func AgentID(clientID string) string {
	var b strings.Builder
	b.WriteString(scope.OAuthAgentPrefix)
	changed := false
	for _, c := range clientID {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			b.WriteRune(c)
		case c >= 'A' && c <= 'Z':
			b.WriteRune(c + 'a' - 'A')
			changed = true
		default:
			b.WriteByte('-')
			changed = true
		}
	}
	id := b.String()
	if !changed && len(id) <= maxAgentID {
		return id
	}
	sum := sha256.Sum256([]byte(clientID))
	suffix := "-" + hex.EncodeToString(sum[:5])
	if len(id) > maxAgentID-len(suffix) {
		id = id[:maxAgentID-len(suffix)]
	}
	return id + suffix
}

// Scopes turns OAuth scopes into the agent's tool scope: the globs of its
// "tools:" scopes, or none (everything its user may). A glob that is not
// valid is dropped rather than widening the scope; if every tools: scope
// was invalid the agent may call nothing ("" matches no tool name).
func Scopes(oauthScopes []string) (allow []string) {
	asked := false
	for _, s := range oauthScopes {
		g, ok := strings.CutPrefix(s, ToolScopePrefix)
		if !ok {
			continue
		}
		asked = true
		if scope.CheckGlob(g) == nil && g != "" {
			allow = append(allow, g)
		}
	}
	if asked && len(allow) == 0 {
		return []string{noTool}
	}
	return allow
}

// noTool is a glob no tool name matches (names never hold a space).
const noTool = "no tool"

// Principal is the caller an OAuth token stands for: an agent (the
// client) acting for user (the mapped claim), with the tool scope of its
// OAuth scopes.
func Principal(clientID, user string, oauthScopes []string) switchboard.Principal {
	p := switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: AgentID(clientID), Allow: Scopes(oauthScopes)}
	if u, ok := switchboard.UserPrincipal(user); ok {
		p.User = u.String()
	}
	return p
}
