package switchboard

import (
	"context"
	"strings"
)

// PrincipalKind says what kind of caller a token belongs to.
type PrincipalKind string

const (
	// PrincipalUser is the human (the admin token, or a user the app signed
	// in). Only a user may decide approvals.
	PrincipalUser PrincipalKind = "user"
	// PrincipalAgent is an agent acting with a scoped token.
	PrincipalAgent PrincipalKind = "agent"
	// PrincipalSession is a browser tab holding its session token.
	PrincipalSession PrincipalKind = "session"
)

// Principal is who is calling. Allow and Deny are tool-name glob scopes
// (agents only; empty Allow means everything); PanelScope limits an agent
// to panels and page slots.
type Principal struct {
	Kind  PrincipalKind `json:"kind"`
	ID    string        `json:"id"`
	Allow []string      `json:"allow,omitempty"`
	Deny  []string      `json:"deny,omitempty"`
	PanelScope
	// Harness is the runtime binding an agent acts through (the chat's
	// binding for the assistant, "mcp" for MCP clients): it decides which
	// harness-contributed tools (Tool.Harness) the agent sees.
	Harness string `json:"harness,omitempty"`
	// User is the person an agent or a tab acts for ("user:alice"). Empty
	// means the operator (user:admin), as for operator-minted tokens. A
	// user principal acts for itself and leaves it empty.
	User string `json:"user,omitempty"`
	// Task is the envelope of the delegated task the principal works on,
	// checked before its own scope: a tool outside it is hidden as one
	// outside the scope is (internal/scope.Allows).
	Task *TaskScope `json:"task,omitempty"`
}

// Operator is the daemon's own user, the admin token's holder: the one
// principal that sees everything and whose decisions on others' approvals
// are recorded as overrides.
const Operator = "user:admin"

// Key tells callers apart where what one stored must not serve another
// (idempotency keys, approval rounds): "kind:id", and for an agent or a
// tab acting for a named user, " for user:<id>" after it — two tokens of
// one agent name for two users, or the users of one OAuth client, are two
// callers. An agent acting for the operator keeps its plain name, as
// before users were named.
func (p Principal) Key() string {
	if p.Kind == PrincipalUser || p.ActsFor() == Operator {
		return p.String()
	}
	return p.String() + " for " + p.ActsFor()
}

// ActsFor is the user p acts for, as "user:<id>": p itself for a user, the
// named user for an agent or a tab, the operator when none is named.
func (p Principal) ActsFor() string {
	if p.Kind == PrincipalUser && p.ID != "" {
		return p.String()
	}
	if u, ok := UserPrincipal(p.User); ok {
		return u.String()
	}
	return Operator
}

// String renders p as "kind:id", the actor name used in the ledger.
func (p Principal) String() string { return string(p.Kind) + ":" + p.ID }

// AssistantID is the agent ID of the built-in assistant (the agent loop).
// Records, ledger entries and approval requests name it "agent:assistant";
// a tab may decide approvals only for this agent's calls in that tab.
const AssistantID = "assistant"

// Assistant returns the principal the built-in assistant's tool calls run
// as: an agent acting for the user, so approval policy treats its
// mutations as proposals.
func Assistant() Principal { return Principal{Kind: PrincipalAgent, ID: AssistantID} }

// UserPrincipal is the user an app named when it opened a browser session:
// apps write the name with its kind ("user:alice") or without ("alice"),
// and the principal carries the kind once. ok is false when no user was
// named.
func UserPrincipal(name string) (p Principal, ok bool) {
	name = strings.TrimPrefix(name, string(PrincipalUser)+":")
	return Principal{Kind: PrincipalUser, ID: name}, name != ""
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p. Transports set it after
// authenticating; the broker reads it.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal in ctx, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
