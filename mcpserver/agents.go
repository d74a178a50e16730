package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
)

// transportMCP names MCP in agent sessions (workspace.TransportMCP).
const transportMCP = "mcp"

// acting puts the agent session of an agent's request in ctx: its MCP
// session's external agent session, started on its first request, ended
// when the MCP session closes.
func (s *Server) acting(ctx context.Context, p switchboard.Principal, ss mcp.Session) context.Context {
	sess, ok := ss.(*mcp.ServerSession)
	if s.opts.Agents == nil || p.Kind != switchboard.PrincipalAgent || !ok || sess == nil {
		return ctx
	}
	conn := sess.ID()
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
