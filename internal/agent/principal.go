package agent

import (
	"context"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// SessionScopes tells the loop the scope an app's backend gave a browser
// session's user; *session.Manager implements it.
type SessionScopes interface {
	Scope(ctx context.Context, sessionID string) (switchboard.SessionScope, error)
}

// assistantFor is who a run's tool calls, listings and digest reads run
// as: the built-in assistant (an agent, so registry.Visible hides user-only
// tools and the approval floor turns its mutations into proposals). A run
// a tab started with its session token (owner "session:<id>") is further
// limited to the scope the app gave that session's user, so a tool outside
// it is TOOL_NOT_FOUND exactly as for an agent token with that scope. A run
// the admin token started keeps the assistant's full scope.
func (rt *Runtime) assistantFor(ctx context.Context, owner string) (switchboard.Principal, error) {
	p := switchboard.Assistant()
	sid, ok := strings.CutPrefix(owner, string(switchboard.PrincipalSession)+":")
	if !ok || rt.opts.Scopes == nil {
		return p, nil
	}
	sc, err := rt.opts.Scopes.Scope(ctx, sid)
	if err != nil {
		return p, err
	}
	p.Allow, p.Deny, p.PanelScope = sc.Allow, sc.Deny, sc.PanelScope
	// The assistant in a tab acts for the tab's user: its approvals are
	// asked of that user, its backend calls say so.
	if us, ok := rt.opts.Scopes.(interface {
		User(ctx context.Context, sessionID string) (string, error)
	}); ok {
		u, err := us.User(ctx, sid)
		if err != nil {
			return p, err
		}
		if up, ok := switchboard.UserPrincipal(u); ok {
			p.User = up.String()
		}
	}
	return p, nil
}
