package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/strictjson"
)

// MaxRegisterBytes bounds a registration body: large catalogs arrive in one
// batch, so this is more generous than the default.
const MaxRegisterBytes = 32 << 20

func (s *Server) toolRoutes() {
	s.mux.HandleFunc("GET /api/v1/tools", s.caller(s.listTools))
	s.mux.HandleFunc("POST /api/v1/tools", s.admin(s.registerTools))
	s.mux.HandleFunc("POST /api/v1/tools/search", s.caller(s.searchTools))
	s.mux.HandleFunc("GET /api/v1/tools/{name}", s.caller(s.getTool))
	s.mux.HandleFunc("DELETE /api/v1/tools/{name}", s.admin(s.deleteTool))
	// What a tool learned from use is the operator's to see and reset: the
	// queries are other callers' words.
	s.mux.HandleFunc("GET /api/v1/tools/{name}/learned", s.admin(s.toolLearned))
	s.mux.HandleFunc("DELETE /api/v1/tools/{name}/learned", s.admin(s.forgetLearned))
}

func (s *Server) toolLearned(w http.ResponseWriter, r *http.Request) {
	l, err := s.reg.Learned(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

func (s *Server) forgetLearned(w http.ResponseWriter, r *http.Request) {
	n, err := s.reg.Forget(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"forgotten": n})
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	surface := switchboard.Surface(q.Get("surface"))
	if surface != "" && surface != switchboard.SurfaceAPI && surface != switchboard.SurfaceBrowser {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "surface must be api or browser, not %q", surface))
		return
	}
	// The registry lists what the caller may see (registry.Visible), and
	// passes the open tabs' live tools through the same predicate.
	live, err := s.openTabs(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tools, err := s.reg.ListWith(r.Context(), surface, live)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion, Tools: redactAll(tools)})
}

// registerBody accepts one descriptor, an array of them, or a manifest.
func (s *Server) registerTools(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := s.decode(w, r, &raw, MaxRegisterBytes); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := parseTools(raw)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	source := switchboard.Source(r.URL.Query().Get("source"))
	if source == "" {
		source = switchboard.SourceHost
	}
	var out []switchboard.Tool
	switch {
	case len(m.Panels)+len(m.Adapters) == 0:
		out, err = s.reg.Register(r.Context(), source, m.Tools)
	case s.opts.Declarations == nil:
		err = switchboard.Errorf(switchboard.CodeInvalidInput, "this daemon serves no panels; send the manifest without panels and adapters")
	default:
		out, err = s.opts.Declarations.DeclareManifest(r.Context(), source, m)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion, Tools: redactAll(out)})
}

// parseTools decodes one descriptor, an array, or a manifest {"tools":
// [...], "panels"?: [...], "adapters"?: [...]}, strictly
// (internal/strictjson).
func parseTools(raw json.RawMessage) (switchboard.Manifest, error) {
	raw = bytes.TrimSpace(raw)
	var m switchboard.Manifest
	switch {
	case len(raw) > 0 && raw[0] == '[':
		return m, strictjson.Decode(raw, &m.Tools, "")
	case len(raw) > 0 && raw[0] == '{':
		var probe map[string]jsontext.Value
		if err := strictjson.Decode(raw, &probe, ""); err != nil {
			return m, err
		}
		if _, ok := probe["tools"]; ok {
			return m, strictjson.Decode(raw, &m, "")
		}
		var t switchboard.Tool
		m.Tools = []switchboard.Tool{t}
		return m, strictjson.Decode(raw, &m.Tools[0], "")
	}
	return m, switchboard.Errorf(switchboard.CodeInvalidInput, "send a tool descriptor, an array of them, or a manifest {\"tools\": [...]}")
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request) {
	live, err := s.openTabs(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The tab's version first (it is what a call runs); TOOL_NOT_FOUND for
	// a tool the caller may not see.
	t, err := s.reg.Describe(r.Context(), r.PathValue("name"), live)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, redact(t))
}

func (s *Server) deleteTool(w http.ResponseWriter, r *http.Request) {
	source := switchboard.Source(r.URL.Query().Get("source"))
	if err := s.reg.Unregister(r.Context(), source, r.PathValue("name")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) searchTools(w http.ResponseWriter, r *http.Request) {
	var q switchboard.SearchQuery
	if err := s.decode(w, r, &q, 64<<10); err != nil {
		s.writeError(w, r, err)
		return
	}
	if q.Limit < 0 || q.Limit > 100 {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "limit must be within 1..100"))
		return
	}
	live, err := s.openTabs(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.reg.SearchMeta(r.Context(), q, live) // only what the caller may see
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res.SearchResult)
}

// redact hides literal header values of HTTP bindings: they may be secrets
// someone wrote inline. Environment references show their variable name.
func redact(t switchboard.Tool) switchboard.Tool {
	if t.Binding == nil || t.Binding.HTTP == nil {
		return t
	}
	b := *t.Binding
	h := *b.HTTP
	h.URL = redactURL(h.URL)
	h.Headers = make(map[string]switchboard.HeaderValue, len(t.Binding.HTTP.Headers))
	for k, v := range t.Binding.HTTP.Headers {
		if v.Env == "" {
			v.Value = "[redacted]"
		}
		h.Headers[k] = v
	}
	b.HTTP = &h
	t.Binding = &b
	return t
}

func redactAll(ts []switchboard.Tool) []switchboard.Tool {
	out := make([]switchboard.Tool, len(ts))
	for i, t := range ts {
		out[i] = redact(t)
	}
	return out
}

// liveTools returns the live browser tools of a session. The session
// package plugs in through Options.SessionTools.
func (s *Server) liveTools(r *http.Request, id string) ([]switchboard.Tool, error) {
	lookup := s.opts.SessionTools
	if lookup == nil && s.opts.Sessions != nil {
		lookup = s.opts.Sessions.Tools
	}
	if lookup == nil {
		return nil, switchboard.Errorf(switchboard.CodeNotFound, "no session %q", id)
	}
	return lookup(r.Context(), id)
}

// redactURL hides credentials written into a binding URL: a user:password
// part, and the values of query parameters named like secrets (api_key,
// token, ...). Placeholders ({field}) are kept: they are not secrets.
func redactURL(raw string) string {
	out := raw
	if scheme, rest, ok := strings.Cut(out, "://"); ok {
		host := rest
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			host = rest[:i]
		}
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			out = scheme + "://[redacted]@" + rest[at+1:]
		}
	}
	base, query, ok := strings.Cut(out, "?")
	if !ok {
		return out
	}
	pairs := strings.Split(query, "&")
	for i, p := range pairs {
		k, v, has := strings.Cut(p, "=")
		if has && registry.SensitiveHeader(k) && !(strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}")) {
			pairs[i] = k + "=[redacted]"
		}
	}
	return base + "?" + strings.Join(pairs, "&")
}
