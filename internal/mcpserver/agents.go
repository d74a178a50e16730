package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
)

// transportMCP names MCP in agent sessions (workspace.TransportMCP).
const transportMCP = "mcp"

// statelessConn names the one external agent session the sessionless
// (2026-07-28) requests of one agent share.
const statelessConn = "stateless"

// acting puts the agent session of an agent's request in ctx: its MCP
// session's external agent session, started on its first request, ended
// when the MCP session closes. Sessionless (2026-07-28) requests have no
// MCP session to follow, so an agent's such requests share one external
// session, which ends after the idle window (workspace.DefaultIdleTimeout)
// with no request: the agent is still listed, seen by the others' digests
// and interruptible, whichever revision its client speaks.
func (s *Server) acting(ctx context.Context, p switchboard.Principal, ss mcp.Session) context.Context {
	sess, ok := ss.(*mcp.ServerSession)
	if s.opts.Agents == nil || p.Kind != switchboard.PrincipalAgent || !ok || sess == nil {
		return ctx
	}
	conn := sess.ID()
	if conn == "" {
		return switchboard.WithAgentSession(ctx, s.opts.Agents.External(ctx, p, transportMCP, statelessConn))
	}
	id := s.opts.Agents.External(ctx, p, transportMCP, conn)
	if _, seen := s.watched.LoadOrStore(sess, true); !seen {
		go func() {
			_ = sess.Wait()
			s.watched.Delete(sess)
			s.opts.Agents.EndExternal(context.Background(), p, transportMCP, conn, "MCP session closed")
		}()
	}
	return switchboard.WithAgentSession(ctx, id)
}
