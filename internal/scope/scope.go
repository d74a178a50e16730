// Package scope is the language of agent scopes and the tokens that carry
// them. A principal's scope is a list of allow and deny globs over tool
// names ('*' matches any run of characters, dots included; '?' one
// character): Allows admits a name when some allow glob matches (an empty
// allow list allows all) and no deny glob does. Users are unscoped.
//
// Who sees and calls which tool is decided in one place, the registry's
// Visible predicate, which uses Allows for the names and adds that no
// agent sees a user-only tool; every listing, search, describe and the
// broker's call-time check go through it. The package also mints, lists,
// revokes and checks the agent tokens that carry scopes (tokens.go).
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

// Allows reports whether p's scope admits the tool named name, whose
// class is not known: a read-only project of a task's envelope admits it
// only by AllowsTool with its class. Principals other than agents are
// unscoped.
func Allows(p switchboard.Principal, name string) bool {
	return AllowsTool(p, name, "")
}

// AllowsTool reports whether p's scope admits the tool named name of
// class class. A delegated task's envelope is checked first, then the
// agent's own scope: a call must pass both.
func AllowsTool(p switchboard.Principal, name string, class switchboard.Class) bool {
	if p.Kind != switchboard.PrincipalAgent {
		return true
	}
	if t := p.Task; t != nil && !EnvelopeAdmits(*t, name, class) {
		return false
	}
	return admits(p.Allow, p.Deny, name)
}

// EnvelopeAdmits reports whether a task's envelope admits a tool: no deny
// glob matches it, and if it is a tool of a listed project some such
// project's access admits its class; a tool of no listed project passes
// the allow globs.
func EnvelopeAdmits(t switchboard.TaskScope, name string, class switchboard.Class) bool {
	if matchAny(t.Deny, name) {
		return false
	}
	member := false
	for _, pr := range t.Projects {
		if inProject(pr, name) {
			if pr.Admits(class) {
				return true
			}
			member = true
		}
	}
	return !member && admits(t.Allow, nil, name)
}

// inProject reports whether name is a tool of project pr (pr.Globs()
// matches it), without building the namespace glob: this runs for every
// tool of every listing under a task. A project name that is no namespace
// is the prefix of no tool name, whose characters are checked.
func inProject(pr switchboard.ProjectScope, name string) bool {
	if len(pr.Allow) > 0 {
		return matchAny(pr.Allow, name)
	}
	ns := pr.Name
	return ns != "" && len(name) > len(ns) && name[len(ns)] == '.' && name[:len(ns)] == ns
}

// admits reports whether name passes one allow/deny pair.
func admits(allow, deny []string, name string) bool {
	for _, d := range deny {
		if Match(d, name) {
			return false
		}
	}
	if len(allow) == 0 {
		return true
	}
	for _, a := range allow {
		if Match(a, name) {
			return true
		}
	}
	return false
}
