// Package web serves the files the daemon hands to browsers, embedded in
// the binary: the browser SDK (/sdk/switchboard.js and its TypeScript
// declarations) and the demo app (/demo/). Neither needs a token: the SDK
// is public code, and the demo gets its session either from a URL fragment
// the user made with curl, or from the demo-only bootstrap route that the
// daemon enables with --demo, gated by the per-start key in the URL that
// serve prints (see Demo).
package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard"
)

// The SDK directory is also an npm package (package.json, tests,
// node_modules): only the files a browser loads are embedded.
//
//go:embed sdk/*.js sdk/*.d.ts sdk/vendor demo
var files embed.FS

// SDKSource returns the SDK module's source, for tests and for apps that
// want to vendor it.
func SDKSource() []byte {
	b, _ := files.ReadFile("sdk/switchboard.js")
	return b
}

// file is one embedded file ready to serve.
type file struct {
	body  []byte
	ctype string
	etag  string
}

func load(dir string) map[string]*file {
	out := map[string]*file{}
	_ = fs.WalkDir(files, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := files.ReadFile(p)
		sum := sha256.Sum256(b)
		out["/"+p] = &file{body: b, ctype: contentType(p), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	return out
}

// contentType is set explicitly: a system mime table may call .ts MPEG.
func contentType(p string) string {
	switch {
	case strings.HasSuffix(p, ".js"):
		return "text/javascript; charset=utf-8"
	case strings.HasSuffix(p, ".d.ts"):
		return "application/typescript; charset=utf-8"
	case strings.HasSuffix(p, ".css"):
		return "text/css; charset=utf-8"
	case strings.HasSuffix(p, ".html"):
		return "text/html; charset=utf-8"
	}
	return "application/octet-stream"
}

func serve(w http.ResponseWriter, r *http.Request, f *file) {
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	// Revalidate every time: an SDK fix reaches tabs on their next load.
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}

// SDK serves /sdk/switchboard.js and /sdk/switchboard.d.ts. Behind the
// daemon's Origin check, an app on an allowed origin may import it
// cross-origin (the check adds the CORS headers).
func SDK() http.Handler {
	fs := load("sdk")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		f := fs[path.Clean(r.URL.Path)]
		if f == nil {
			http.NotFound(w, r)
			return
		}
		serve(w, r, f)
	})
}

// DemoKeyHeader carries the demo key on POST /demo/session. The page reads
// the key from its URL (?key=, as serve --demo prints it) once, keeps it in
// sessionStorage and sends it here; a header, not the URL, so it is never
// in a request line, a log or a Referer.
const DemoKeyHeader = "X-Switchboard-Demo-Key"

// DemoOptions configures the demo app.
type DemoOptions struct {
	// OpenSession, when set, enables POST /demo/session, which opens a
	// session for the demo page itself. Leave it nil unless the operator
	// asked for the demo (switchboard serve --demo).
	OpenSession func(ctx context.Context) (any, error)
	// Key is the per-start secret a request to POST /demo/session must
	// carry in DemoKeyHeader (the Jupyter token pattern): the route needs
	// no admin token, and Origin and Sec-Fetch-Site can be forged by any
	// local process, so without the key any of them could act as the demo
	// user. Required when OpenSession is set; Demo refuses every mint
	// while it is empty.
	Key string
	// MaxSessions bounds how many sessions the bootstrap route opens over
	// the daemon's life (default 1000).
	MaxSessions int64
}

// Demo serves the demo app under /demo/: its files, index.html for any
// other /demo/ path (it is a single-page app with real URLs), and the
// bootstrap route when enabled.
func Demo(opts DemoOptions) http.Handler {
	fs := load("demo")
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 1000
	}
	var opened atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := path.Clean(r.URL.Path)
		if p == "/demo/session" {
			if opts.OpenSession == nil {
				writeError(w, switchboard.Errorf(switchboard.CodeNotFound,
					"the demo session route is off; start the daemon with --demo, or pass #session=..&token=.. in the URL"), http.StatusNotFound)
				return
			}
			if r.Method != http.MethodPost {
				w.Header().Set("Allow", "POST")
				writeError(w, switchboard.Errorf(switchboard.CodeInvalidInput, "use POST"), http.StatusMethodNotAllowed)
				return
			}
			if !sameOrigin(r) {
				writeError(w, switchboard.Errorf(switchboard.CodeOriginRejected,
					"the demo session route serves only the daemon's own /demo/ page"), http.StatusForbidden)
				return
			}
			// Before the cap: a caller without the key must not use it up.
			if e := checkKey(opts.Key, r.Header.Get(DemoKeyHeader)); e != nil {
				writeError(w, e, http.StatusUnauthorized)
				return
			}
			if opened.Add(1) > opts.MaxSessions {
				writeError(w, switchboard.Errorf(switchboard.CodeRateLimited, "the demo has opened %d sessions; restart the daemon", opts.MaxSessions), http.StatusTooManyRequests)
				return
			}
			created, err := opts.OpenSession(r.Context())
			if err != nil {
				writeError(w, switchboard.AsError(err), http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(created)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		f := fs[p]
		if f == nil {
			if path.Ext(p) != "" { // a missing asset, not a page
				http.NotFound(w, r)
				return
			}
			f = fs["/demo/index.html"]
		}
		// The page's first URL carries the key: no Referer may repeat it to
		// another site (the page also drops it from the URL at once).
		w.Header().Set("Referrer-Policy", "no-referrer")
		serve(w, r, f)
	})
}

// checkKey compares the key a request sent with the daemon's in constant
// time. Missing and wrong are both UNAUTHORIZED (a credential), with a
// message that says where the right one is.
func checkKey(want, got string) *switchboard.Error {
	const where = "open the demo with the URL `switchboard serve --demo` printed (http://HOST/demo/?key=...); the key changes at every start"
	switch {
	case want == "":
		return switchboard.Errorf(switchboard.CodeUnauthorized, "the daemon has no demo key, so the demo session route is closed")
	case got == "":
		return switchboard.Errorf(switchboard.CodeUnauthorized, "missing the demo key (%s header): %s", DemoKeyHeader, where)
	case subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1:
		return switchboard.Errorf(switchboard.CodeUnauthorized, "wrong demo key: %s", where)
	}
	return nil
}

// sameOrigin accepts only a request a browser sent from the daemon's own
// pages: Origin must be this host, and Sec-Fetch-Site, when the browser
// sends it, must say same-origin. (A non-browser client can forge both,
// which is why the route also needs the demo key.)
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	u, err := url.Parse(o)
	if o == "" || err != nil || !strings.EqualFold(u.Host, r.Host) {
		return false
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return false
	}
	return true
}

func writeError(w http.ResponseWriter, e *switchboard.Error, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(switchboard.ErrorEnvelope{Error: e})
}
