package registry

import (
	"strings"

	"github.com/switchboardhq/switchboard"
)

// sensitiveHeaderParts mark header names whose values are credentials. A
// credential written inline would be stored in plain text and copied into
// every backup, so such headers must use an {"env": NAME} reference.
var sensitiveHeaderParts = []string{"authorization", "cookie", "key", "token", "secret", "password", "passwd", "credential", "auth", "session", "signature"}

// SensitiveHeader reports whether a header of this name carries credentials.
func SensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	for _, p := range sensitiveHeaderParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

// checkHTTPBinding adds the binding rules that protect credentials and
// the network: placeholders only in the path and query (an input that
// chooses the host would let a caller aim the daemon at any server), and
// no literal values for credential headers.
func checkHTTPBinding(t *switchboard.Tool) error {
	u := t.Binding.HTTP.URL
	if i := strings.Index(u, "://"); i >= 0 {
		authority := u[i+3:]
		if j := strings.IndexAny(authority, "/?#"); j >= 0 {
			authority = authority[:j]
		}
		if strings.ContainsAny(u[:i], "{}") || strings.ContainsAny(authority, "{}") {
			return switchboard.Errorf(switchboard.CodeInvalidInput,
				"tool %s: binding url %q has a {placeholder} in its scheme or host; placeholders may fill only the path and query", t.Name, u)
		}
	}
	if a := t.Binding.HTTP.Audience; len(a) > 512 || strings.ContainsFunc(a, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
		return switchboard.Errorf(switchboard.CodeInvalidInput,
			"tool %s: binding audience must be at most 512 printable characters without spaces (a URL or an identifier the backend checks as aud)", t.Name)
	}
	if te := t.Binding.HTTP.TokenExchange; te != nil {
		if te.Audience == "" || len(te.Audience) > 512 || strings.ContainsFunc(te.Audience, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
			return switchboard.Errorf(switchboard.CodeInvalidInput,
				"tool %s: tokenExchange.audience is required: the backend API's identifier at the identity provider (at most 512 printable characters without spaces)", t.Name)
		}
		if len(te.Scopes) > 32 {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: tokenExchange asks for %d scopes; at most 32", t.Name, len(te.Scopes))
		}
		for _, s := range te.Scopes {
			if s == "" || len(s) > 256 || strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r == 0x7f || r == '"' || r == '\\' }) {
				return switchboard.Errorf(switchboard.CodeInvalidInput,
					"tool %s: tokenExchange scope %q is not an OAuth scope token (printable, no spaces, quotes or backslashes)", t.Name, s)
			}
		}
		for name := range t.Binding.HTTP.Headers {
			if strings.EqualFold(name, "Authorization") {
				return switchboard.Errorf(switchboard.CodeInvalidInput,
					"tool %s: a binding with tokenExchange sends the exchanged token as Authorization; drop its own Authorization header", t.Name)
			}
		}
	}
	for name := range t.Binding.HTTP.Headers {
		if strings.EqualFold(name, "Switchboard-Assertion") {
			return switchboard.Errorf(switchboard.CodeInvalidInput,
				"tool %s: header Switchboard-Assertion is the daemon's signed statement of who acts for whom; a binding cannot set it", t.Name)
		}
	}
	return checkHeaderSecrets(t)
}

// checkHeaderSecrets refuses literal values for credential headers.
func checkHeaderSecrets(t *switchboard.Tool) error {
	for name, v := range t.Binding.HTTP.Headers {
		if v.Env == "" && SensitiveHeader(name) {
			return switchboard.Errorf(switchboard.CodeInvalidInput,
				`tool %s: header %s looks like a credential, so its value must not be stored in plain text; use {"env": "NAME"} and set NAME in the daemon's environment`, t.Name, name)
		}
	}
	return nil
}
