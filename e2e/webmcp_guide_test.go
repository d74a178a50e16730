package e2e

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/session"
)

// guideBlock returns the fenced block of docs/webmcp.md that follows the
// marker <!-- webmcp-guide name -->.
func guideBlock(t *testing.T, name string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "webmcp.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- webmcp-guide "+name+" -->")
	if !ok {
		t.Fatalf("docs/webmcp.md has no <!-- webmcp-guide %s --> block", name)
	}
	_, rest, _ = strings.Cut(rest, "```")
	_, rest, _ = strings.Cut(rest, "\n") // the fence's language
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("the %s block of docs/webmcp.md is not closed", name)
	}
	return block
}

// TestWebMCPGuideInChromium follows docs/webmcp.md as written: its
// server.mjs (run by node) serves its index.html and opens the page's
// session; in Chromium the page's WebMCP tool and form tool are the tab's
// browser tools, the CLI prints what the guide shows, and an MCP client
// calls the tool. Only the addresses change: the daemon's and a free port
// for the app. Run with Chromium's own WebMCP and with the polyfill.
func TestWebMCPGuideInChromium(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping the WebMCP guide: node is not installed")
	}
	for _, mode := range webmcpModes {
		t.Run(mode.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
			l.Close()
			app := "http://127.0.0.1:" + port
			e := newEnvFlags(t, session.Options{Heartbeat: heartbeat}, mode.flags, app)

			dir := t.TempDir()
			for _, name := range []string{"server.mjs", "index.html"} {
				src := strings.NewReplacer("http://127.0.0.1:7766", e.srv.URL, "8081", port).Replace(guideBlock(t, name))
				if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("node", "server.mjs")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "SWITCHBOARD_URL="+e.srv.URL, "SWITCHBOARD_TOKEN="+adminToken)
			logs := &lockedWriter{w: &strings.Builder{}}
			cmd.Stderr = logs
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			ready := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				if sc.Scan() {
					ready <- sc.Text()
				}
				_, _ = io.Copy(io.Discard, stdout)
			}()
			select {
			case line := <-ready:
				if line != "app on "+app {
					t.Fatalf("server.mjs printed %q", line)
				}
			case <-time.After(stepTimeout):
				t.Fatalf("server.mjs did not start: %s", logs.String())
			}

			ctx, cancel := e.tab(t, app+"/")
			defer cancel()
			poll(t, ctx, `document.getElementById("status").textContent.startsWith("open: ses_")`)
			id := strings.TrimPrefix(eval[string](t, ctx, `document.getElementById("status").textContent`), "open: ")
			e.waitTools(t, id, "cart.show", "flights.search")

			// Step 4, as written: one tab open, so no --session.
			out := e.cli(t, "tools", "call", "cart.show") + e.cli(t, "tools", "call", "flights.search", "--input", `{"to": "Oslo"}`)
			if want := guideBlock(t, "cli-output"); out != want {
				t.Errorf("the CLI printed\n%s\nthe guide shows\n%s", out, want)
			}
			poll(t, ctx, `document.getElementById("flights").textContent === "Oslo 08:10, Oslo 17:45"`)

			// Step 5: an MCP client calls the page's tool.
			cs, _ := e.mcpAgent(t, "cart.*")
			res := mcpCall(t, cs, "cart-show", nil)
			if res.IsError || resultText(res) != `{"items":["socks","tea"]}` {
				t.Errorf("MCP cart-show: %s (error %v)", resultText(res), res.IsError)
			}
			// The page reported no refused tool.
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, m := range e.console {
				if strings.Contains(m, "switchboard:") {
					t.Errorf("the page reported %s", m)
				}
			}
		})
	}
}
