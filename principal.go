package switchboard

import "context"

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
// (agents only; empty Allow means everything).
type Principal struct {
	Kind  PrincipalKind `json:"kind"`
	ID    string        `json:"id"`
	Allow []string      `json:"allow,omitempty"`
	Deny  []string      `json:"deny,omitempty"`
}

// String renders p as "kind:id", the actor name used in the ledger.
func (p Principal) String() string { return string(p.Kind) + ":" + p.ID }

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
