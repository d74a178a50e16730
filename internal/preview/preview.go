// Package preview serves the sandboxed preview tier (issue 18 item 6):
// runnable UI an agent wrote — a preview panel node's HTML with inline CSS
// and JS — served as a document of its own from a separate origin, which
// the SDK shows only inside <iframe sandbox="allow-scripts"> (never
// allow-same-origin). Three walls hold the code in:
//
//   - the sandbox gives the document an opaque origin, so it cannot read
//     the parent page's DOM, cookies or storage, even the preview origin's
//     own, and cannot navigate the top window;
//   - the separate origin (another port, better another host) means that
//     even without the sandbox it would be cross-origin to the app and to
//     the daemon's API;
//   - the Content-Security-Policy header forbids every fetch, XHR,
//     WebSocket, form post, external script, style, image or frame
//     (default-src 'none', connect-src 'none'), allows inline script and
//     style only, repeats the sandbox (so the document is sandboxed even if
//     opened on its own), and names who may frame it.
//
// The server never sets a cookie, reads none, and answers nothing but the
// documents the panel service put in it. Documents are addressed by a keyed
// hash of their code: the same code gets the same URL (a re-render adds
// nothing), and an address cannot be guessed without the code and the
// server's key. The store is bounded by count and bytes, oldest out first.
package preview

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
)

// Bounds of the store.
const (
	// DefaultMaxDocs bounds the documents kept.
	DefaultMaxDocs = 512
	// DefaultMaxBytes bounds their total size.
	DefaultMaxBytes = 32 << 20
)

// Options configures a Server.
type Options struct {
	// FrameAncestors are the origins allowed to frame previews (the app's
	// and the daemon's); empty means any ("*"), as the documents carry no
	// secret of their own.
	FrameAncestors []string
	MaxDocs        int
	MaxBytes       int
}

// Server holds preview documents and serves them. Safe for concurrent use.
type Server struct {
	origin string
	key    []byte
	csp    string
	opts   Options

	mu    sync.Mutex
	docs  map[string][]byte
	order []string // oldest first
	bytes int
}

// New returns a Server whose documents are addressed under origin
// ("http://127.0.0.2:7767"), the address its Handler is served at.
func New(origin string, opts *Options) *Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxDocs <= 0 {
		o.MaxDocs = DefaultMaxDocs
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails on supported platforms
	ancestors := "*"
	if len(o.FrameAncestors) > 0 {
		ancestors = strings.Join(o.FrameAncestors, " ")
	}
	return &Server{origin: strings.TrimSuffix(origin, "/"), key: key, opts: o, docs: map[string][]byte{},
		csp: "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; font-src data:; media-src data:; " +
			"connect-src 'none'; form-action 'none'; base-uri 'none'; frame-src 'none'; worker-src 'none'; manifest-src 'none'; " +
			"frame-ancestors " + ancestors + "; sandbox allow-scripts"}
}

// Origin is the origin previews are served from.
func (s *Server) Origin() string { return s.origin }

// CSP is the Content-Security-Policy every preview is served with.
func (s *Server) CSP() string { return s.csp }

// Put stores code as a preview document and returns its URL.
func (s *Server) Put(code string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(code))
	id := hex.EncodeToString(m.Sum(nil)[:16])
	doc := document(code)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.docs[id]; !ok {
		s.docs[id] = doc
		s.order = append(s.order, id)
		s.bytes += len(doc)
		for len(s.order) > 1 && (len(s.order) > s.opts.MaxDocs || s.bytes > s.opts.MaxBytes) {
			old := s.order[0]
			s.order = s.order[1:]
			s.bytes -= len(s.docs[old])
			delete(s.docs, old)
		}
	}
	return s.origin + "/p/" + id
}

// document wraps an agent's code in a page of its own. The code is put in
// verbatim: whatever it does, it does inside the sandbox.
func document(code string) []byte {
	return []byte("<!doctype html>\n<html><head><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\">" +
		"<title>preview</title></head><body>\n" + code + "\n</body></html>\n")
}

// Handler serves GET /p/{id}; everything else is 404 or 405.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /p/{id}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		doc, ok := s.docs[r.PathValue("id")]
		s.mu.Unlock()
		h := w.Header()
		h.Set("Content-Security-Policy", s.csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=(), clipboard-read=(), clipboard-write=()")
		if !ok {
			http.Error(w, "no such preview (it may have been evicted; the panel shows it again when it is re-rendered)", http.StatusNotFound)
			return
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(doc)
	})
	return mux
}
