// Command backend-session is what an app's backend does when a signed-in
// user loads a page with the switchboard SDK: it opens a browser session
// for that user (POST /api/v1/sessions with the admin token) and hands the
// session id and token to the page. Standard library only, so it can be
// copied into any Go backend.
//
//	SWITCHBOARD_TOKEN=$(cat ~/.local/share/switchboard/admin.token) go run ./examples/backend-session user:42
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
)

// Session is what the page needs: pass both to the SDK's connect().
type Session struct {
	SessionID    string `json:"sessionId"`
	SessionToken string `json:"sessionToken"`
}

// openSession asks the daemon at base for a session acting for principal
// ("user:42"), limited to the tools allow admits (empty: not limited).
func openSession(ctx context.Context, base, adminToken, principal string, allow []string) (Session, error) {
	body, _ := json.Marshal(map[string]any{"principal": principal, "allow": allow})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/sessions", bytes.NewReader(body))
	if err != nil {
		return Session{}, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Session{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		return Session{}, fmt.Errorf("open session: %s: %s", resp.Status, b)
	}
	var s Session
	return s, json.Unmarshal(b, &s)
}

func main() {
	base := os.Getenv("SWITCHBOARD_URL")
	if base == "" {
		base = "http://127.0.0.1:7766"
	}
	principal := "user:42"
	if len(os.Args) > 1 {
		principal = os.Args[1]
	}
	s, err := openSession(context.Background(), base, os.Getenv("SWITCHBOARD_TOKEN"), principal, []string{"tasks.*", "nav.*"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(s)
}
