package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/strictjson"
)

// Declarations registers the host panels and data adapters an app in any
// language declares (*daemon.Daemon is the implementation,
// internal/daemon/hostpanels.go): every write is all or nothing.
type Declarations interface {
	DeclarePanels(ctx context.Context, panels []switchboard.HostPanel) ([]switchboard.HostPanel, error)
	DeclaredPanels(ctx context.Context) ([]switchboard.HostPanel, error)
	UndeclarePanel(ctx context.Context, id string) error
	DeclareAdapters(ctx context.Context, adapters []switchboard.HostAdapter) ([]switchboard.HostAdapter, error)
	DeclaredAdapters(ctx context.Context) ([]switchboard.HostAdapter, error)
	UndeclareAdapter(ctx context.Context, name string) error
	InvalidateAdapter(ctx context.Context, name string) error
	// DeclareManifest registers a manifest's tools, adapters and panels
	// together (POST /tools with a manifest that has panels or adapters).
	DeclareManifest(ctx context.Context, source switchboard.Source, m switchboard.Manifest) ([]switchboard.Tool, error)
}

// Declaration routes. They change what every agent is offered, so only
// the admin token (the app's backend, the operator) may use them; the
// backend's invalidate webhook authenticates the same way.
func (s *Server) declaredRoutes() {
	if s.opts.Declarations == nil {
		return
	}
	s.mux.HandleFunc("POST /api/v1/panels", s.admin(s.declarePanels))
	s.mux.HandleFunc("GET /api/v1/panels", s.admin(s.declaredPanels))
	s.mux.HandleFunc("DELETE /api/v1/panels/{id}", s.admin(s.undeclarePanel))
	s.mux.HandleFunc("POST /api/v1/adapters", s.admin(s.declareAdapters))
	s.mux.HandleFunc("GET /api/v1/adapters", s.admin(s.declaredAdapters))
	s.mux.HandleFunc("DELETE /api/v1/adapters/{name}", s.admin(s.undeclareAdapter))
	s.mux.HandleFunc("POST /api/v1/adapters/{name}/invalidate", s.admin(s.invalidateAdapter))
}

func (s *Server) declarePanels(w http.ResponseWriter, r *http.Request) {
	var panels []switchboard.HostPanel
	if err := s.decodeArray(w, r, &panels, "panels [{id, title, description, scope?, contextKinds?, spec}]"); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.opts.Declarations.DeclarePanels(r.Context(), panels)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"panels": out})
}

func (s *Server) declaredPanels(w http.ResponseWriter, r *http.Request) {
	out, err := s.opts.Declarations.DeclaredPanels(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"panels": out})
}

func (s *Server) undeclarePanel(w http.ResponseWriter, r *http.Request) {
	if err := s.opts.Declarations.UndeclarePanel(r.Context(), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) declareAdapters(w http.ResponseWriter, r *http.Request) {
	var adapters []switchboard.HostAdapter
	if err := s.decodeArray(w, r, &adapters, "adapters [{name, description?, query, mutate?, approval?, querySchema?, recordSchema?}]"); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.opts.Declarations.DeclareAdapters(r.Context(), adapters)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"adapters": out})
}

func (s *Server) declaredAdapters(w http.ResponseWriter, r *http.Request) {
	out, err := s.opts.Declarations.DeclaredAdapters(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"adapters": out})
}

func (s *Server) undeclareAdapter(w http.ResponseWriter, r *http.Request) {
	if err := s.opts.Declarations.UndeclareAdapter(r.Context(), r.PathValue("name")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) invalidateAdapter(w http.ResponseWriter, r *http.Request) {
	if err := s.opts.Declarations.InvalidateAdapter(r.Context(), r.PathValue("name")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// decodeArray reads a JSON array body strictly (unknown fields refused).
func (s *Server) decodeArray(w http.ResponseWriter, r *http.Request, v any, what string) error {
	var raw json.RawMessage
	if err := s.decode(w, r, &raw, MaxRegisterBytes); err != nil {
		return err
	}
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '[' {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "send a JSON array of %s", what)
	}
	return strictjson.Decode(raw, v, "")
}
