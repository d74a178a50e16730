package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/oauth2"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/filelock"
	"github.com/switchboardhq/switchboard/internal/oauthas"
)

// LoginFile is the sign-in 'switchboard login' keeps in the data root.
const LoginFile = "login.json"

// login is a person's sign-in at one daemon, as saved in LoginFile.
type login struct {
	Addr       string    `json:"addr"`   // the daemon's base URL the CLI reached
	Issuer     string    `json:"issuer"` // its authorization server
	TokenURL   string    `json:"tokenUrl"`
	RevokeURL  string    `json:"revokeUrl,omitempty"`
	User       string    `json:"user"`
	Access     string    `json:"access"`
	Refresh    string    `json:"refresh"`
	Expiry     time.Time `json:"expiry"`
	SignedInAt time.Time `json:"signedInAt"`
}

// asMetadata is what login reads of the authorization server metadata.
type asMetadata struct {
	Issuer    string `json:"issuer"`
	AuthURL   string `json:"authorization_endpoint"`
	TokenURL  string `json:"token_endpoint"`
	RevokeURL string `json:"revocation_endpoint"`
}

func (l *login) config() *oauth2.Config {
	return &oauth2.Config{ClientID: oauthas.CLIClientID, Scopes: []string{oauthas.ConsoleScope},
		Endpoint: oauth2.Endpoint{TokenURL: l.TokenURL, AuthStyle: oauth2.AuthStyleInParams}}
}

func (l *login) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: l.Access, RefreshToken: l.Refresh, Expiry: l.Expiry, TokenType: "Bearer"}
}

func (g *globals) loginPath() (string, error) {
	if err := g.readClientConfig(); err != nil {
		return "", err
	}
	dir, err := daemon.DataDir(g.data)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, LoginFile), nil
}

// readLogin returns the saved sign-in for the daemon at g.addr, or nil
// when there is none (or it is another daemon's).
func (g *globals) readLogin() (*login, string, error) {
	path, err := g.loginPath()
	if err != nil {
		return nil, "", err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, path, nil
	}
	if err != nil {
		return nil, path, switchboard.Errorf(switchboard.CodeInternal, "read %s: %v", path, err)
	}
	var l login
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, path, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: %v ('switchboard logout' removes it)", path, err)
	}
	if l.Addr != client.New(g.addr, "", nil).BaseURL() {
		return nil, path, nil
	}
	return &l, path, nil
}

// writeLogin saves l to path, readable by its owner only, replacing the
// file in one rename so a reader never sees half of it.
func writeLogin(path string, l *login) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "save the sign-in: %v", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "save the sign-in: %v", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil { // WriteFile keeps an existing file's mode
		return switchboard.Errorf(switchboard.CodeInternal, "save the sign-in: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "save the sign-in: %v", err)
	}
	return nil
}

// loginToken returns the signed-in person's access token for g's daemon,
// refreshed first when it has expired; "" when nobody is signed in. The
// refresh token rotates (a used one is refused, and presenting it again
// revokes the grant), so the new pair is saved before the access token is
// used.
func (g *globals) loginToken(ctx context.Context) (string, error) {
	l, path, err := g.readLogin()
	if err != nil || l == nil {
		return "", err
	}
	old := l.token()
	if old.Valid() {
		g.loginUser = l.User
		return l.Access, nil
	}
	// One refresh at a time: two commands started together would spend
	// the same refresh token, and its second use revokes the grant. The
	// one that waited reads what the other saved.
	unlock, err := filelock.Lock(path + ".lock")
	if err != nil {
		return "", switchboard.Errorf(switchboard.CodeInternal, "lock the sign-in: %v", err)
	}
	defer unlock()
	if l, path, err = g.readLogin(); err != nil || l == nil {
		return "", err
	}
	if old = l.token(); old.Valid() {
		g.loginUser = l.User
		return l.Access, nil
	}
	tok, err := l.config().TokenSource(ctx, old).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return "", switchboard.Errorf(switchboard.CodeUnauthorized,
				"the sign-in of %s ended (%s: %s); run 'switchboard login' again, or 'switchboard logout' to use the admin token", l.User, re.ErrorCode, re.ErrorDescription)
		}
		return "", switchboard.Errorf(switchboard.CodeUnavailable, "refresh the sign-in of %s: %v", l.User, err)
	}
	l.Access, l.Refresh, l.Expiry = tok.AccessToken, tok.RefreshToken, tok.Expiry
	if err := writeLogin(path, l); err != nil {
		return "", err
	}
	g.loginUser = l.User
	return l.Access, nil
}

func newLogin(g *globals) *cobra.Command {
	var noBrowser bool
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "login",
		Short: "Sign in as yourself, through the app, for the commands that follow",
		Long: `Sign in to the daemon's authorization server as a person of the host app
(serve with --public-url and --oauth-login-url; docs/oauth.md). login prints a
URL and opens it in a browser; you sign in to the app there and allow
"switchboard command line". The CLI waits on a loopback port for the answer,
then keeps the sign-in in <data>/login.json (mode 0600; --data, $SWITCHBOARD_DATA
or ~/.local/share/switchboard).

While you are signed in, client commands act as you rather than as the
operator, and see your own records only: 'approvals list|approve|deny',
'activity', 'grant list|revoke' and the other commands a person may use.
Commands that need the operator answer FORBIDDEN: pass --token, or run
'switchboard logout'. The access token is refreshed when it expires.`,
		Example: `  switchboard login
  switchboard login --no-browser     # print the URL only, e.g. over SSH
  switchboard approvals list
  switchboard logout`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return g.login(c.Context(), noBrowser, timeout)
		},
	}
	c.Flags().BoolVar(&noBrowser, "no-browser", false, "print the URL without opening a browser")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the browser")
	return c
}

func (g *globals) login(ctx context.Context, noBrowser bool, timeout time.Duration) error {
	path, err := g.loginPath()
	if err != nil {
		return err
	}
	base := client.New(g.addr, "", nil).BaseURL()
	md, err := discover(ctx, base)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "listen for the browser: %v", err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
	l := &login{Addr: base, Issuer: md.Issuer, TokenURL: md.TokenURL, RevokeURL: md.RevokeURL}
	cfg := l.config()
	cfg.Endpoint.AuthURL, cfg.RedirectURL = md.AuthURL, redirect
	resource := oauth2.SetAuthURLParam("resource", strings.TrimSuffix(md.Issuer, "/")+"/api/v1")
	verifier, state := oauth2.GenerateVerifier(), oauth2.GenerateVerifier() // the state: 32 random bytes too
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), resource)

	type answer struct {
		code string
		err  error
	}
	answers := make(chan answer, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		var a answer
		switch {
		case q.Get("state") != state:
			http.Error(w, "This sign-in is not the one the command line started; run 'switchboard login' again.", http.StatusBadRequest)
			return // a stray request: keep waiting for the real one
		case q.Get("error") != "":
			a.err = switchboard.Errorf(switchboard.CodeForbidden, "sign-in refused: %s %s", q.Get("error"), q.Get("error_description"))
		case q.Get("code") == "":
			a.err = switchboard.Errorf(switchboard.CodeInvalidInput, "the browser came back without a code")
		default:
			a.code = q.Get("code")
		}
		msg := "Signed in. You can close this tab and return to your terminal."
		if a.err != nil {
			msg = "Not signed in: " + a.err.Error()
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>switchboard</title><p>%s</p>\n", html.EscapeString(msg))
		select {
		case answers <- a:
		default:
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()

	fmt.Fprintf(g.stderr, "Open this URL in a browser to sign in:\n\n  %s\n\n", authURL)
	if !noBrowser {
		openBrowser(authURL)
	}
	fmt.Fprintln(g.stderr, "Waiting for the browser...")
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var a answer
	select {
	case a = <-answers:
	case <-wait.Done():
		if ctx.Err() != nil {
			return switchboard.Errorf(switchboard.CodeCancelled, "login cancelled")
		}
		return switchboard.Errorf(switchboard.CodeTimeout, "no answer from the browser in %s; run 'switchboard login' again", timeout)
	}
	if a.err != nil {
		return a.err
	}
	tok, err := cfg.Exchange(ctx, a.code, oauth2.VerifierOption(verifier), resource)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return switchboard.Errorf(switchboard.CodeUnauthorized, "exchange the code: %s: %s", re.ErrorCode, re.ErrorDescription)
		}
		return switchboard.Errorf(switchboard.CodeUnavailable, "exchange the code: %v", err)
	}
	l.Access, l.Refresh, l.Expiry, l.SignedInAt = tok.AccessToken, tok.RefreshToken, tok.Expiry, time.Now().UTC()
	l.User = subject(tok.AccessToken)
	if err := writeLogin(path, l); err != nil {
		return err
	}
	if g.json {
		return g.printJSON(map[string]any{"user": l.User, "issuer": l.Issuer, "file": path})
	}
	fmt.Fprintf(g.stdout, "signed in as %s\n", l.User)
	return nil
}

// discover reads the authorization server metadata the daemon serves.
func discover(ctx context.Context, base string) (*asMetadata, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/.well-known/oauth-authorization-server", nil)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%v", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "reach the daemon at %s: %v", base, err)
	}
	defer res.Body.Close()
	var md asMetadata
	if res.StatusCode == http.StatusNotFound {
		return nil, switchboard.Errorf(switchboard.CodeNotFound,
			"the daemon at %s has no authorization server: serve it with --public-url and --oauth-login-url (docs/oauth.md)", base)
	}
	if res.StatusCode != http.StatusOK {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "authorization server metadata at %s: HTTP %d", base, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&md); err != nil || md.AuthURL == "" || md.TokenURL == "" || md.Issuer == "" {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "authorization server metadata at %s: incomplete (%v)", base, err)
	}
	return &md, nil
}

// subject is the sub claim of a JWT access token, read without checking
// the signature: only to say who signed in (the daemon checks the token).
func subject(jwt string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "?"
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "?"
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(b, &claims) != nil || claims.Sub == "" {
		return "?"
	}
	return claims.Sub
}

// openBrowser tries to open u; failing to is not an error, since the URL
// is printed.
func openBrowser(u string) {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	if cmd.Start() == nil {
		go cmd.Wait()
	}
}

func newLogout(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the sign-in of 'switchboard login' (and revoke it)",
		Long: `Delete <data>/login.json, after revoking its refresh token at the
authorization server (which ends the grant; a failure to reach the server is
reported but the file is deleted anyway). Client commands then use --token,
$SWITCHBOARD_TOKEN or <data>/admin.token again.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			path, err := g.loginPath()
			if err != nil {
				return err
			}
			b, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintln(g.stdout, "not signed in")
				return nil
			}
			var l login
			if err == nil && json.Unmarshal(b, &l) == nil && l.RevokeURL != "" && l.Refresh != "" {
				if err := revoke(c.Context(), l.RevokeURL, l.Refresh); err != nil {
					fmt.Fprintf(g.stderr, "warning: revoke the sign-in: %v\n", err)
				}
			}
			if err := os.Remove(path); err != nil {
				return switchboard.Errorf(switchboard.CodeInternal, "remove %s: %v", path, err)
			}
			_ = os.Remove(path + ".lock")
			if l.User != "" {
				fmt.Fprintf(g.stdout, "signed out %s\n", l.User)
			} else {
				fmt.Fprintln(g.stdout, "signed out")
			}
			return nil
		},
	}
}

// revoke ends the grant behind refresh (RFC 7009; public client).
func revoke(ctx context.Context, endpoint, refresh string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	form := url.Values{"token": {refresh}, "token_type_hint": {"refresh_token"}, "client_id": {oauthas.CLIClientID}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", res.StatusCode)
	}
	return nil
}
