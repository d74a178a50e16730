package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/daemon"
)

// TestAISDKExampleServer runs examples/aisdk-usechat/server.mjs, the
// example's backend, as its README does, against a real daemon: the
// session it opens for the page is one the daemon's chat route accepts,
// and it serves the built page (or says how to build it).
func TestAISDKExampleServer(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping the AI SDK example's backend: node is not installed")
	}
	d, _ := scriptedDaemon(t, daemon.Options{})
	srv := httptestServer(t, d)

	dir := filepath.Join("..", "examples", "aisdk-usechat")
	cmd := exec.Command("node", "server.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWITCHBOARD_URL="+srv.URL, "SWITCHBOARD_TOKEN="+adminToken, "PORT=0", "SWITCHBOARD_PRINCIPAL=user:dana")
	logs := &lockedWriter{w: &strings.Builder{}}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var ready struct{ URL string }
	select {
	case l := <-line:
		if err := json.Unmarshal([]byte(l), &ready); err != nil || ready.URL == "" {
			t.Fatalf("server.mjs printed %q, want {\"url\": ...}", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("server.mjs did not start: %s", logs.String())
	}

	resp, err := http.Post(ready.URL+"app/switchboard-session", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ API, SessionToken string }
	err = json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || s.API != srv.URL || s.SessionToken == "" {
		t.Fatalf("the session answer: %d %+v %v (%s)", resp.StatusCode, s, err, logs.String())
	}
	// The page uses that token on the chat routes.
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/agent/tools", nil)
	req.Header.Set("Authorization", "Bearer "+s.SessionToken)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("the page's token on /api/v1/agent/tools: %v %v", r, err)
	} else {
		r.Body.Close()
	}

	r, err := http.Get(ready.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if _, built := os.Stat(filepath.Join(dir, "dist", "app.js")); built == nil {
		if r.StatusCode != http.StatusOK || !strings.Contains(string(body), `src="app.js"`) {
			t.Errorf("GET / answered %d %q", r.StatusCode, body)
		}
	} else if r.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "npm run build") {
		t.Errorf("GET / without a build answered %d %q", r.StatusCode, body)
	}
	// A path that climbs out of dist/, sent as written.
	up, _ := http.NewRequest("GET", ready.URL, nil)
	up.URL.Opaque = "/../../../go.mod"
	if r, err := http.DefaultClient.Do(up); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if strings.Contains(string(b), "module github.com/switchboardhq/switchboard") {
			t.Error("the server serves files outside dist/")
		}
	}
}
