package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed console
var consoleFiles embed.FS

// consolePolicy is the console's Content-Security-Policy: its own scripts,
// styles and images only, nothing inline, no framing. The console renders
// daemon data only through textContent; the policy is a second fence
// should that ever slip.
const consolePolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Console serves the operator console at / : its page (also at
// /console/), one ES module per view, the stylesheet and the favicon, all
// from internal/web/console. The page is static and public; every API call
// it makes carries the token the tab signed in with (the admin token the
// operator pastes in, or a user's access token), kept in sessionStorage
// for that tab only.
func Console() http.Handler {
	loaded := map[string]*file{}
	_ = fs.WalkDir(consoleFiles, "console", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := consoleFiles.ReadFile(p)
		sum := sha256.Sum256(b)
		ctype := contentType(p)
		if strings.HasSuffix(p, ".svg") {
			ctype = "image/svg+xml"
		}
		loaded["/"+path.Base(p)] = &file{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := r.URL.Path
		if p == "/console" {
			http.Redirect(w, r, "/console/", http.StatusFound)
			return
		}
		// /console/ is the page too: it is where a user's sign-in through
		// the authorization server comes back to (the console client's
		// redirect URI); its modules and stylesheet are the ones at /.
		if p == "/" || p == "/console/" {
			p = "/index.html"
		}
		f, ok := loaded[p]
		if !ok || strings.Contains(p[1:], "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Security-Policy", consolePolicy)
		w.Header().Set("Referrer-Policy", "no-referrer")
		serve(w, r, f)
	})
}
