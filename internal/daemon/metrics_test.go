package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// TestMetricsRouteNeedsAdmin: GET /metrics is the admin's, in the
// Prometheus text format, and counts a call with its labels — never its
// arguments.
func TestMetricsRouteNeedsAdmin(t *testing.T) {
	t.Parallel()
	d, srv := agentsDaemon(t, daemon.Options{})
	registerEcho(t, d)
	if code, _ := do(t, srv, agentsToken, "POST", "/api/v1/tools/ops.echo/call", map[string]any{"input": map[string]any{"text": "secret-argument"}}); code != 200 {
		t.Fatalf("call: %d", code)
	}
	if code, m := do(t, srv, "", "GET", "/metrics", nil); code != 401 || errCode(m) != "UNAUTHORIZED" {
		t.Fatalf("no token: %d %v", code, m)
	}
	_, tok := do(t, srv, agentsToken, "POST", "/api/v1/tokens", map[string]any{"agent": "bot"})
	if code, m := do(t, srv, tok["token"].(string), "GET", "/metrics", nil); code != 403 {
		t.Fatalf("agent token: %d %v", code, m)
	}
	body := scrape(t, srv.URL+"/metrics", agentsToken)
	want := `switchboard_calls_total{class="read",outcome="succeeded",surface="api",tool="ops.echo",transport="go"} 1`
	if !strings.Contains(body, want) {
		t.Errorf("metrics lack %s:\n%s", want, grepLines(body, "switchboard_"))
	}
	for _, name := range []string{"switchboard_call_duration_seconds_bucket", "switchboard_open_tabs", "switchboard_agent_sessions", "switchboard_runs_active", "switchboard_jobs_running", "go_goroutines",
		"switchboard_store_commit_seconds_bucket", "switchboard_store_commit_batch_size_bucket", "switchboard_bus_lag_seconds_bucket"} {
		if !strings.Contains(body, name) {
			t.Errorf("metrics lack %s", name)
		}
	}
	if strings.Contains(body, "secret-argument") {
		t.Error("an argument value reached the metrics")
	}
}

// TestPrometheusScrapesDaemon runs Debian's prometheus against a daemon
// (scraping /metrics with the admin token, as docs/operations.md shows)
// and asks its HTTP API for a call the test just made.
func TestPrometheusScrapesDaemon(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (apt-get install prometheus; .ci/run installs it); skipping the real-scrape test")
	}
	t.Parallel()
	d, srv := agentsDaemon(t, daemon.Options{})
	registerEcho(t, d)
	for range 3 {
		if code, m := do(t, srv, agentsToken, "POST", "/api/v1/tools/ops.echo/call", map[string]any{"input": map[string]any{"text": "hi"}}); code != 200 {
			t.Fatalf("call: %d %v", code, m)
		}
	}
	dir := t.TempDir()
	target := strings.TrimPrefix(srv.URL, "http://")
	tokFile := filepath.Join(dir, "token")
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: switchboard
    metrics_path: /metrics
    authorization:
      credentials_file: %s
    static_configs:
      - targets: [%q]
`, tokFile, target)
	if err := os.WriteFile(tokFile, []byte(agentsToken), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })

	// Prometheus scrapes on its own schedule; ask until it has the series
	// (or a minute passes on a loaded machine).
	q := url.Values{"query": {`sum(switchboard_calls_total{job="switchboard",tool="ops.echo",outcome="succeeded"})`}}
	deadline := time.Now().Add(time.Minute)
	for {
		v, err := promQuery(promAddr, q)
		if err == nil && v == "3" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus never reported 3 calls (last: %q, %v); its log:\n%s", v, err, log.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func registerEcho(t *testing.T, d *daemon.Daemon) {
	t.Helper()
	echo := switchboard.Tool{Name: "ops.echo", Description: "Echo a text.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
	if err := d.RegisterFunc(context.Background(), echo, func(_ context.Context, in json.RawMessage) (any, error) {
		return in, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func scrape(t *testing.T, u, tok string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return string(b)
}

// promQuery runs an instant query and returns the one sample's value.
func promQuery(addr string, q url.Values) (string, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?" + q.Encode())
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return "", err
	}
	if r.Status != "success" || len(r.Data.Result) != 1 {
		return "", fmt.Errorf("status %s, %d results", r.Status, len(r.Data.Result))
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	return s, nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func grepLines(s, prefix string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A call to a tool a tab advertised (no catalog entry) is counted with
// the tool's class and transport "browser", not "other".
func TestMetricsLabelTabToolCalls(t *testing.T) {
	t.Parallel()
	e := newWorkspaceDaemon(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin := client.New(e.srv.URL, wsToken, nil)
	s := e.openSession(t, "alice")
	tab := admin.Tab(client.SessionCredentials{SessionID: s.SessionID, SessionToken: s.SessionToken})
	nav := switchboard.Tool{Name: "nav.goto", Description: "Go to a page of the app.", Class: switchboard.ClassUI, ViewStateOnly: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"page":{"type":"string"}}}`)}
	if _, err := tab.Advertise(ctx, []switchboard.Tool{nav}); err != nil {
		t.Fatal(err)
	}
	go tab.Serve(ctx, func(context.Context, switchboard.BrowserActionRequest) (json.RawMessage, error) {
		return json.RawMessage(`{"ok":true}`), nil
	})
	var err error
	for range 100 { // until the stream is attached
		if _, err = admin.CallTool(ctx, "nav.goto", json.RawMessage(`{"page":"home"}`), client.CallOptions{SessionID: s.SessionID}); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	body := scrape(t, e.srv.URL+"/metrics", wsToken)
	want := `switchboard_calls_total{class="ui",outcome="succeeded",surface="browser",tool="nav.goto",transport="browser"} 1`
	if !strings.Contains(body, want) {
		t.Errorf("metrics lack %s:\n%s", want, grepLines(body, "switchboard_calls_total"))
	}
}
