// Package scope decides who may see and call which tool. A principal's
// scope is a list of allow and deny globs over tool names ('*' matches any
// run of characters, dots included; '?' one character): an agent may use a
// tool when some allow glob matches (an empty allow list allows all) and no
// deny glob does. Users are unscoped. user-only tools are never visible to
// or callable by agents.
//
// The same predicate (Visible) filters listings, search and describe in
// every transport and is checked again by the broker before a call runs
// (Admit), so an agent never sees a tool it cannot call and cannot call a
// tool it was not shown. The package also mints, lists, revokes and checks
// the agent tokens that carry those scopes (tokens.go).
package scope

import (
	"strings"

	"github.com/switchboardhq/switchboard"
)

// Match reports whether the glob pattern matches name in full. '*' matches
// any run of characters (dots included), '?' exactly one.
func Match(pattern, name string) bool {
	// Iterative matching with one backtrack point: linear in practice and
	// never exponential, whatever the pattern.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// CheckGlob refuses a pattern that could never match a tool name.
func CheckGlob(pattern string) error {
	if pattern == "" || len(pattern) > 200 {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "scope pattern %q must be 1-200 characters", pattern)
	}
	for _, r := range pattern {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("._-*?", r)) {
			return switchboard.Errorf(switchboard.CodeInvalidInput,
				"scope pattern %q: use tool-name characters (a-z, 0-9, '.', '_', '-') and the wildcards * and ?", pattern)
		}
	}
	return nil
}

// Allows reports whether p's scope admits the tool named name. Principals
// other than agents are unscoped.
func Allows(p switchboard.Principal, name string) bool {
	if p.Kind != switchboard.PrincipalAgent {
		return true
	}
	for _, d := range p.Deny {
		if Match(d, name) {
			return false
		}
	}
	if len(p.Allow) == 0 {
		return true
	}
	for _, a := range p.Allow {
		if Match(a, name) {
			return true
		}
	}
	return false
}

// Visible reports whether p may see (list, search, describe) and call t:
// Allows, and no agent ever sees a user-only tool. It has the signature of
// mcpserver.Options.Visible.
func Visible(p switchboard.Principal, t switchboard.Tool) bool {
	if p.Kind == switchboard.PrincipalAgent && t.Approval == switchboard.ApprovalUserOnly {
		return false
	}
	return Allows(p, t.Name)
}

// Admit is the broker's check before a call is recorded: FORBIDDEN, with
// the reason, for a tool outside the caller's scope or a user-only tool
// called by an agent.
func Admit(p switchboard.Principal, t switchboard.Tool) error {
	if p.Kind == switchboard.PrincipalAgent && t.Approval == switchboard.ApprovalUserOnly {
		return switchboard.Errorf(switchboard.CodeForbidden, "%s is user-only: agents cannot call it; ask the user to run it", t.Name).
			WithDetails(map[string]any{"tool": t.Name, "reason": "user-only"})
	}
	if !Allows(p, t.Name) {
		return switchboard.Errorf(switchboard.CodeForbidden, "%s is outside the scope of %s", t.Name, p).
			WithDetails(map[string]any{"tool": t.Name, "reason": "scope", "allow": p.Allow, "deny": p.Deny})
	}
	return nil
}
