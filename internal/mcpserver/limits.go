package mcpserver

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/ratelimit"
	"github.com/switchboardhq/switchboard/internal/seats"
)

// SessionLimits caps one principal's MCP sessions: Max held at once, and
// Rate of opening (initialize). It is internal/seats' Limits.
type SessionLimits = seats.Limits

// DefaultSessionLimits: a principal holds at most 100 MCP sessions and
// opens at most 10 a second (bursts of 50). A client opens one per
// connection, so only a loop that opens sessions without end meets them;
// idle sessions close after SessionTimeout and give their seat back.
var DefaultSessionLimits = SessionLimits{Max: 100, Rate: ratelimit.Rate{PerSecond: 10, Burst: 50}}

// opening serves a request that opens an MCP session (initialize) with a
// seat of the caller's: RATE_LIMITED before the SDK sees it when the
// caller holds the most sessions it may or opens them too fast. The seat
// is given back when the session closes (DELETE, SessionTimeout, the
// server's close), or at once when the request opened none.
func (s *Server) opening(w http.ResponseWriter, r *http.Request, p switchboard.Principal, next http.Handler) {
	// Per caller, as Principal.Key tells them apart: one agent name (or
	// OAuth client) acting for two users holds two sets of seats.
	key := p.Key()
	release, err := s.seats.Take(key)
	if err != nil {
		s.log.WarnContext(r.Context(), "MCP session refused", "principal", key, "err", err)
		writeHTTPError(w, err)
		return
	}
	next.ServeHTTP(w, r)
	if id := w.Header().Get("Mcp-Session-Id"); id != "" {
		if ss := s.session(id); ss != nil {
			go func() {
				_ = ss.Wait()
				release()
				if s.seatReleased != nil {
					s.seatReleased <- key
				}
			}()
			return
		}
	}
	release()
}

// session finds the live MCP session id.
func (s *Server) session(id string) *mcp.ServerSession {
	for ss := range s.sdk.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}
