package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

const testToken = "cli-test-token"

// startDaemon serves a real daemon over SQLite on a loopback test server.
func startDaemon(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); d.Close() })
	return srv.URL
}

// run executes the CLI and returns exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

const manifestYAML = `
tools:
  - name: tasks.create
    description: Create a task in a project. The task starts open.
    class: mutate
    inputSchema:
      type: object
      properties:
        projectId: {type: string, description: The project that owns the task}
        title: {type: string}
      required: [projectId, title]
  - name: tasks.list
    description: List the tasks of a project, newest first.
    class: read
  - name: media.upload
    description: Upload an image to the media library.
    class: mutate
`

func TestToolsCommands(t *testing.T) {
	url := startDaemon(t)
	file := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(file, []byte(manifestYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	g := []string{"--addr", url, "--token", testToken}
	code, out, errs := run(t, append(g, "tools", "register", file)...)
	if code != 0 || !strings.Contains(out, "registered tasks.create [api, mutate]") {
		t.Fatalf("register: %d %q %q", code, out, errs)
	}
	code, out, _ = run(t, append(g, "tools", "list")...)
	if code != 0 || !strings.Contains(out, "NAME") || !strings.Contains(out, "media.upload") {
		t.Fatalf("list: %d %q", code, out)
	}
	code, out, _ = run(t, append(g, "tools", "search", "create a task", "--json")...)
	var res switchboard.SearchResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Items) == 0 || res.Items[0].Name != "tasks.create" {
		t.Fatalf("search: %d %q", code, out)
	}
	code, out, _ = run(t, append(g, "tools", "describe", "tasks.create")...)
	var tool switchboard.Tool
	if code != 0 || json.Unmarshal([]byte(out), &tool) != nil || !strings.Contains(string(tool.InputSchema), "projectId") {
		t.Fatalf("describe: %d %q", code, out)
	}
	// Failures print the code and exit non-zero.
	code, _, errs = run(t, append(g, "tools", "describe", "tasks.nope")...)
	if code != 1 || !strings.Contains(errs, "TOOL_NOT_FOUND") {
		t.Errorf("describe unknown: %d %q", code, errs)
	}
	code, _, errs = run(t, append(g, "tools", "describe")...)
	if code != 2 || !strings.Contains(errs, "expects one tool NAME") {
		t.Errorf("usage error: %d %q", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("tools:\n  - name: Bad Name\n    description: x\n    class: read\n"), 0o600)
	code, _, errs = run(t, append(g, "--json", "tools", "register", bad)...)
	var env switchboard.ErrorEnvelope
	if code != 1 || json.Unmarshal([]byte(errs), &env) != nil || env.Error.Code != switchboard.CodeInvalidInput {
		t.Errorf("bad manifest: %d %q", code, errs)
	}
	code, _, errs = run(t, "--addr", url, "--token", "wrong", "tools", "list")
	if code != 1 || !strings.Contains(errs, "UNAUTHORIZED") {
		t.Errorf("wrong token: %d %q", code, errs)
	}
	code, _, errs = run(t, "--addr", "127.0.0.1:1", "--token", "x", "tools", "list")
	if code != 1 || !strings.Contains(errs, "switchboard serve") {
		t.Errorf("no daemon: %d %q", code, errs)
	}
}

// TestServeFindsTokenAndShutsDown runs `switchboard serve` on SQLite under a
// fresh data root, uses it from the CLI with no token flag (the token is
// found in the data root), then cancels it as SIGTERM would.
func TestServeFindsTokenAndShutsDown(t *testing.T) {
	data := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("SWITCHBOARD_TOKEN", "")
	t.Setenv("SWITCHBOARD_STORE", "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serr bytes.Buffer
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", addr, "--data", data}, nil, &bytes.Buffer{}, &serr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not come up: %s", serr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, err := os.Stat(filepath.Join(data, daemon.TokenFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %v %v", err, st)
	}
	code, out, errs := run(t, "--addr", addr, "--data", data, "tools", "list", "--json")
	if code != 0 || !strings.Contains(out, `"tools"`) {
		t.Fatalf("list without token flag: %d %q %q", code, out, errs)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, serr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not shut down")
	}
	if !strings.Contains(serr.String(), "stopped") {
		t.Errorf("no shutdown log: %s", serr.String())
	}
}

// TestServeConfigIsChecked: a config file with a misspelt key or a bad
// value stops serve before it listens, naming the problem.
func TestServeConfigIsChecked(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ yaml, want string }{
		"unknown key":     {"governance:\n  approvalTTl: 5m\n", "approvalTTl"},
		"bad floor":       {"governance:\n  approvalFloor: {mutate: maybe}\n", "not none, hitl or user-only"},
		"bad mcp mode":    {"mcp:\n  mode: lazy\n", "use auto, full or deferred"},
		"bad rate limit":  {"governance:\n  rateLimit: {perAgent: {perSecond: fast}}\n", "INVALID_INPUT"},
		"bad canvas":      {"canvasPolicy:\n  preset: wide-open\n", `use "guarded" or "open"`},
		"bad canvas gate": {"canvasPolicy:\n  autoPin: sometimes\n", "canvasPolicy.autoPin"},
		"bad a2a peer":    {"a2a:\n  peers: [{url: ftp://peer.example}]\n", "a2a.peers[0]"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errs := run(t, "serve", "--config", path, "--data", dir, "--addr", "127.0.0.1:1")
		if code != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stderr %q (want it to mention %q)", name, code, errs, tc.want)
		}
	}
}

// TestCanvasPolicyFlag: a preset serve does not know is a usage error.
func TestCanvasPolicyFlag(t *testing.T) {
	code, _, errs := run(t, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--canvas-policy", "wide-open")
	if code != 2 || !strings.Contains(errs, "use guarded or open") {
		t.Fatalf("exit %d, %q", code, errs)
	}
}

// TestTelemetryURLFlag: a --telemetry-url that cannot receive POSTs is a
// usage error at start, and the message does not echo it (it may hold a
// secret in its path or user info).
func TestTelemetryURLFlag(t *testing.T) {
	for _, u := range []string{"collector.example/events", "ftp://collector.example/x", "https://", "http://user:s3cret@[::1"} {
		code, _, errs := run(t, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--telemetry-url", u)
		if code != 2 || !strings.Contains(errs, "--telemetry-url must be an absolute http or https URL") || strings.Contains(errs, "s3cret") {
			t.Errorf("%q: exit %d, %q", u, code, errs)
		}
	}
	// The signing key comes from the environment only; a bad one, or one
	// with no webhook to sign for, is a usage error that does not echo it.
	for _, c := range []struct{ secret, url, want string }{
		{"whsec_c2hvcnQ=", "https://collector.example/events", "too short"},
		{"s3cret-key", "https://collector.example/events", "starts with whsec_"},
		{"whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "", "--telemetry-url is not"},
	} {
		t.Setenv("SWITCHBOARD_TELEMETRY_SECRET", c.secret)
		args := []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}
		if c.url != "" {
			args = append(args, "--telemetry-url", c.url)
		}
		code, _, errs := run(t, args...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Contains(errs, strings.TrimPrefix(c.secret, "whsec_")) {
			t.Errorf("secret %q: exit %d, %q; want a usage error saying %q", c.secret, code, errs, c.want)
		}
	}
}

// TestOAuthExchangeClientFlag: token exchange needs the issuer that
// exchanges and the client's secret from the environment; without either
// serve stops at once with a usage error.
func TestOAuthExchangeClientFlag(t *testing.T) {
	for _, c := range []struct {
		args   []string
		secret string
	}{
		{[]string{"--oauth-exchange-client", "switchboard"}, "s3cret"},
		{[]string{"--oauth-exchange-client", "switchboard", "--oauth-issuer", "https://idp.example"}, ""},
	} {
		t.Setenv("SWITCHBOARD_OAUTH_EXCHANGE_SECRET", c.secret)
		code, _, errs := run(t, append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, "--oauth-exchange-client needs --oauth-issuer") || strings.Contains(errs, "s3cret") {
			t.Errorf("%v: exit %d, %q", c.args, code, errs)
		}
	}
}

// TestTyposAreUsageErrors: an unknown command or subcommand exits 2 with a
// usage error instead of printing help and exiting 0 (or 1 as INTERNAL).
func TestTyposAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"lst"}, {"tools", "lst"}, {"approvals", "aprove", "x"}, {"tools", "list", "--bogus"}} {
		code, _, errs := run(t, args...)
		if code != 2 || !strings.Contains(errs, "unknown") || strings.Contains(errs, "INTERNAL") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
	if code, out, _ := run(t, "tools"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("a bare group prints its help: %d %q", code, out)
	}
}

// TestCountsArePlural: counts say "1 tool", not "1 tools".
func TestCountsArePlural(t *testing.T) {
	url := startDaemon(t)
	g := []string{"--addr", url, "--token", testToken}
	file := filepath.Join(t.TempDir(), "one.yaml")
	// The daemon's own read tools (activity.get, …) are api tools: the
	// one browser tool is alone in its surface.
	one := "tools:\n  - name: page.scroll\n    description: Scroll the page.\n    class: ui\n    surface: browser\n    viewStateOnly: true\n"
	if err := os.WriteFile(file, []byte(one), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, append(g, "tools", "register", file)...); code != 0 {
		t.Fatalf("register: %d %q", code, errs)
	}
	if code, _, errs := run(t, append(g, "tools", "list", "--surface", "browser")...); code != 0 || errs != "1 tool\n" {
		t.Errorf("tools list: exit %d, stderr %q, want \"1 tool\\n\"", code, errs)
	}
	if code, _, errs := run(t, append(g, "approvals", "list")...); code != 0 || errs != "0 approvals\n" {
		t.Errorf("approvals list: exit %d, stderr %q", code, errs)
	}
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 entries"}, {1, "1 entry"}, {2, "2 entries"}} {
		if got := count(tc.n, "entry", "entries"); got != tc.want {
			t.Errorf("count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestServeCanvasAndPreview: the config file's canvasPolicy with its preset
// replaced by --canvas-policy is the daemon's layer, and --preview-addr
// serves the preview origin, which GET /api/v1/canvas names.
func TestServeCanvasAndPreview(t *testing.T) {
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	addr, paddr, data := free(), free(), t.TempDir()
	cfg := filepath.Join(data, "sb.yaml")
	if err := os.WriteFile(cfg, []byte("canvasPolicy:\n  preset: guarded\n  autoPin: false\n  allowCodePreview: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SWITCHBOARD_STORE", "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serr bytes.Buffer
	go func() {
		done <- Run(ctx, []string{"serve", "--config", cfg, "--addr", addr, "--data", data, "--token", testToken,
			"--canvas-policy", "open", "--preview-addr", paddr}, nil, &bytes.Buffer{}, &serr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not come up: %s", serr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/v1/canvas", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Daemon        map[string]any `json:"daemon"`
		Effective     map[string]any `json:"effective"`
		PreviewOrigin string         `json:"previewOrigin"`
	}
	json.NewDecoder(resp.Body).Decode(&l)
	resp.Body.Close()
	if l.Daemon["preset"] != "open" || l.Daemon["autoPin"] != false || l.Effective["preset"] != "custom" || l.Effective["allowCodePreview"] != true ||
		l.Effective["hitlOnCompose"] != false || l.PreviewOrigin != "http://"+paddr {
		t.Fatalf("canvas layers: %+v", l)
	}
	presp, err := http.Get(l.PreviewOrigin + "/p/0123")
	if err != nil {
		t.Fatal(err)
	}
	presp.Body.Close()
	if presp.StatusCode != 404 || !strings.Contains(presp.Header.Get("Content-Security-Policy"), "frame-ancestors http://127.0.0.1:") {
		t.Fatalf("preview origin: %d %q", presp.StatusCode, presp.Header.Get("Content-Security-Policy"))
	}
}

// TestExampleManifestFollowsDaemon registers examples/manifests/tasks.yaml
// with a demo daemon on a port other than 7766: its path-only bindings must
// name this daemon, and a call must reach this daemon's sample backend.
func TestExampleManifestFollowsDaemon(t *testing.T) {
	t.Setenv("TASKS_API_KEY", "any")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: testToken, Demo: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); d.Close() })

	g := []string{"--addr", srv.URL, "--token", testToken}
	if code, out, errs := run(t, append(g, "tools", "register", "../../examples/manifests/tasks.yaml")...); code != 0 {
		t.Fatalf("register: %d %q %q", code, out, errs)
	}
	code, out, _ := run(t, append(g, "tools", "describe", "tasks.list")...)
	var tool switchboard.Tool
	if code != 0 || json.Unmarshal([]byte(out), &tool) != nil || tool.Binding == nil || tool.Binding.HTTP == nil {
		t.Fatalf("describe: %d %q", code, out)
	}
	if want := srv.URL + "/demo/api/projects/{projectId}/tasks"; tool.Binding.HTTP.URL != want {
		t.Fatalf("binding url %q, want %q", tool.Binding.HTTP.URL, want)
	}
	code, out, errs := run(t, append(g, "tools", "call", "tasks.list", "--input", `{"projectId":"apollo"}`)...)
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "[") && !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Fatalf("call: %d %q %q", code, out, errs)
	}
}

// A manifest's adapters and panels register with its tools, all or
// nothing: a panel the validator refuses leaves none of them.
func TestToolsRegisterPanelsAndAdapters(t *testing.T) {
	url := startDaemon(t)
	g := []string{"--addr", url, "--token", testToken}
	doc := func(href string) string {
		return `
tools:
  - name: projects.archive
    description: Archive a project.
    class: mutate
    binding: {http: {method: POST, url: /app/archive}}
adapters:
  - name: projects
    query: {method: POST, url: /app/projects/query}
    mutate: {update: {method: PUT, url: "/app/projects/{key}"}}
panels:
  - id: project.settings
    title: Project settings
    description: Edit one project.
    spec:
      v: 1
      root: body
      sources: {project: {kind: adapter, adapter: projects, key: id}}
      actions: {save: {kind: mutate, source: project, op: update}}
      nodes:
        body: {type: body, props: {title: Settings}, children: [form, more]}
        form: {type: form, props: {bind: project, action: save, fields: [{name: name, label: Name, kind: text}]}}
        more: {type: link, props: {href: "` + href + `", label: Help}}
`
	}
	dir := t.TempDir()
	bad, good := filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "good.yaml")
	os.WriteFile(bad, []byte(doc("javascript:alert(1)")), 0o600)
	os.WriteFile(good, []byte(doc("https://example.com/help")), 0o600)
	code, _, errs := run(t, append(g, "tools", "register", bad)...)
	if code != 1 || !strings.Contains(errs, "SPEC_UNSAFE") {
		t.Fatalf("register a manifest with an unsafe panel: %d %q", code, errs)
	}
	for _, name := range []string{"projects.archive", "data.projects.query"} {
		if code, _, _ := run(t, append(g, "tools", "describe", name)...); code != 1 {
			t.Fatalf("a refused manifest registered %s", name)
		}
	}
	code, out, errs := run(t, append(g, "tools", "register", good)...)
	if code != 0 || !strings.Contains(out, "registered projects.archive") || !strings.Contains(out, "registered adapter projects") ||
		!strings.Contains(out, "registered panel project.settings") {
		t.Fatalf("register: %d %q %q", code, out, errs)
	}
	code, out, _ = run(t, append(g, "tools", "describe", "data.projects.update")...)
	if code != 0 || !strings.Contains(out, url+"/app/projects/{key}") {
		t.Fatalf("the adapter's update tool: %d %q", code, out)
	}
	code, out, _ = run(t, append(g, "panels", "list")...)
	if code != 0 || !strings.Contains(out, "project.settings") || !strings.Contains(out, "Project settings") {
		t.Fatalf("panels list: %d %q", code, out)
	}
	if code, out, errs = run(t, append(g, "panels", "delete", "project.settings")...); code != 0 {
		t.Fatalf("panels delete: %d %q %q", code, out, errs)
	}
	if code, _, errs = run(t, append(g, "panels", "delete", "project.settings")...); code != 1 || !strings.Contains(errs, "NOT_FOUND") {
		t.Fatalf("panels delete of a deleted panel: %d %q", code, errs)
	}
}
