package httpapi

import (
	"net/http"

	"github.com/switchboardhq/switchboard/internal/panel"
)

// Canvas policy routes (docs/panels.md "Canvas policy"): the host reads
// and sets its layer with the admin token; a tab reads what is in force
// for it with its session token. The policy is decided in internal/panel/canvas.go;
// these only translate.
func (s *Server) canvasRoutes() {
	if s.opts.Panels == nil {
		return
	}
	s.mux.HandleFunc("GET /api/v1/canvas", s.admin(s.getCanvas))
	s.mux.HandleFunc("PUT /api/v1/canvas", s.admin(s.putCanvas))
	if s.opts.Sessions != nil {
		s.mux.HandleFunc("GET /api/v1/sessions/{id}/canvas", s.sessionOrAdmin(s.sessionCanvas))
		s.mux.HandleFunc("POST /api/v1/sessions/{id}/panels/{instanceId}/pin", s.sessionAuth(s.pinPanel))
	}
}

func (s *Server) getCanvas(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.opts.Panels.CanvasLayers(""))
}

// putCanvas replaces the host's layer: {"preset": "open"} switches every
// surface to open in one setting.
func (s *Server) putCanvas(w http.ResponseWriter, r *http.Request) {
	var p panel.CanvasPolicy
	if err := s.decode(w, r, &p, 16<<10); err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.opts.Panels.SetHostCanvas(p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.record(r, "canvas.set", "host", map[string]any{"policy": p, "effective": l.Effective})
	writeJSON(w, http.StatusOK, l)
}

func (s *Server) sessionCanvas(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.opts.Panels.CanvasFor(r.PathValue("id")))
}

// pinPanel keeps an agent panel the user chose to keep.
func (s *Server) pinPanel(w http.ResponseWriter, r *http.Request) {
	sn, err := s.opts.Panels.Pin(r.Context(), r.PathValue("instanceId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sn)
}
