package httpapi

import (
	"net/http"

	"github.com/switchboardhq/switchboard/internal/registry"
)

// openTabs is the live browser tools the catalog routes list beside the
// catalog (registry.Live, the view MCP lists too): one session's with
// ?session=ID, else every connected tab's; nil without sessions. Each
// tool's origin names its tab.
func (s *Server) openTabs(r *http.Request) (*registry.Live, error) {
	if id := r.URL.Query().Get("session"); id != "" {
		tools, err := s.liveTools(r, id)
		if err != nil {
			return nil, err
		}
		return registry.NewLive(tools), nil
	}
	if s.opts.Sessions == nil {
		return nil, nil
	}
	return registry.NewLive(s.opts.Sessions.LiveTools()), nil
}
