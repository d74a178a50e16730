package registry

import (
	"context"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// Visible is the one visibility predicate: it reports whether the caller
// in ctx (switchboard.PrincipalFrom) may see t — find it in a listing or a
// search, describe it, and call it. A tool the daemon cannot serve this
// caller right now (Options.Offered) is not seen. Otherwise users, browser
// sessions and in-process callers without a principal see everything; an
// agent sees a tool when its scope allows the name and class (scope.AllowsTool), the
// tool is not user-only for agents (its declared approval, or
// Options.Approval's verdict), and a tool a runtime binding contributes
// (Tool.Harness) is seen only by agents acting through that binding
// (Principal.Harness).
//
// It lives here, and not in each transport or in the broker's policy,
// because the registry is the one door every path reads the catalog
// through: List, Search and Get filter with it, and the broker resolves a
// call with Get, so a transport cannot forget it and a call can never
// reach a tool its caller was not shown. For a hidden tool every read
// answers exactly what it answers for a name that does not exist
// (TOOL_NOT_FOUND, the same message), so nothing tells an agent that a
// tool outside its scope exists. Browser tools that tabs advertise are not
// in the catalog; whoever offers or runs them (the MCP listing, the HTTP
// listing of a session, the agent loop, the broker) passes them through
// Visible too. scope/ keeps only the glob language and the agent tokens.
//
// A tab's tool under the name of a catalog api tool is seen by no one
// (shadow.go): the api tool is what a call of that name runs.
func (r *Registry) Visible(ctx context.Context, t switchboard.Tool) bool {
	if r.shadows(t) || (r.offered != nil && !r.offered(ctx, t)) {
		return false
	}
	p, ok := switchboard.PrincipalFrom(ctx)
	if !ok || p.Kind != switchboard.PrincipalAgent {
		return true
	}
	if r.approvalOf(t) == switchboard.ApprovalUserOnly {
		return false
	}
	if t.Harness != "" && t.Harness != p.Harness {
		return false // another runtime's own tool
	}
	return scope.AllowsTool(p, t.Name, t.Class)
}

// approvalOf is the approval an agent's call of t gets.
func (r *Registry) approvalOf(t switchboard.Tool) switchboard.Approval {
	if r.approval != nil {
		return r.approval(t)
	}
	return t.Approval
}

// notFound is the answer for a name the caller cannot see, whether it
// does not exist or is hidden from the caller: one message for both.
func notFound(name string) error {
	return switchboard.Errorf(switchboard.CodeToolNotFound, "no tool named %q; search the catalog to find the right name", name)
}
