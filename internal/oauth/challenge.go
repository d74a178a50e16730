package oauth

import "strings"

// OAuth error codes of RFC 6750 §3.1 that a resource server answers with.
const (
	// ErrInvalidToken: the token is expired, revoked, malformed, for
	// another audience or issuer, or otherwise not good here (401).
	ErrInvalidToken = "invalid_token"
	// ErrInsufficientScope: the token is good but lacks the scope the
	// request needs (403); the challenge names the scope to ask for.
	ErrInsufficientScope = "insufficient_scope"
)

// Challenge is the WWW-Authenticate value of a refusal. code is "" when
// the request carried no token (RFC 6750 §3.1: then no error code), else
// ErrInvalidToken or ErrInsufficientScope. Every challenge names the
// resource metadata (MCP authorization: clients discover the
// authorization server from it) and the scope /mcp needs, so a client asks
// for exactly that scope.
func (r Resource) Challenge(code, description string) string {
	params := []string{}
	if code != "" {
		params = append(params, `error="`+code+`"`)
		if description != "" {
			params = append(params, `error_description="`+quotable(description)+`"`)
		}
	}
	params = append(params, `scope="`+quotable(r.RequiredScope())+`"`)
	if u := r.MetadataURL(); u != "" {
		params = append(params, `resource_metadata="`+u+`"`)
	}
	return "Bearer " + strings.Join(params, ", ")
}

// quotable keeps what RFC 6750 allows inside a quoted parameter
// (%x20-21 / %x23-5B / %x5D-7E): a message never breaks the header.
func quotable(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' {
			b.WriteRune(c)
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}
