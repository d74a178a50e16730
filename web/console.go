package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"strings"
)

//go:embed console
var consoleFiles embed.FS

// Console serves the operator console at / : the catalog with search and
// describe, pending approvals and the activity ledger. The page is static
// and public; every API call it makes carries the admin token the operator
// pastes in, kept in sessionStorage for that tab only.
func Console() http.Handler {
	loaded := map[string]*file{}
	for _, name := range []string{"index.html", "console.js", "console.css"} {
		b, _ := consoleFiles.ReadFile("console/" + name)
		sum := sha256.Sum256(b)
		loaded["/"+name] = &file{body: b, ctype: contentType(name), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := r.URL.Path
		if p == "/" {
			p = "/index.html"
		}
		f, ok := loaded[p]
		if !ok || strings.Contains(p[1:], "/") {
			http.NotFound(w, r)
			return
		}
		// The console renders daemon data only through textContent; the
		// policy is a second fence should that ever slip.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'")
		w.Header().Set("Referrer-Policy", "no-referrer")
		serve(w, r, f)
	})
}
