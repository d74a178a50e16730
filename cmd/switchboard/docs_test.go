package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsMCPCurl runs the curl walkthrough of docs/mcp.md as written
// (the token read from the default data root under a fresh HOME, the
// address replaced by a test daemon's) and checks that it lists the tools.
func TestDocsMCPCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not found")
	}
	doc, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- mcp-curl")
	if !ok {
		t.Fatal("docs/mcp.md has no <!-- mcp-curl --> block")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	script, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the mcp-curl block is not closed")
	}

	url := startDaemon(t)
	file := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(file, []byte(manifestYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "--addr", url, "--token", testToken, "tools", "register", file); code != 0 {
		t.Fatalf("register: %d %q %q", code, out, errs)
	}
	home := t.TempDir()
	data := filepath.Join(home, ".local", "share", "switchboard")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "admin.token"), []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(script, "http://127.0.0.1:7766", url))
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the docs' curl block: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"tools":[`) {
		t.Fatalf("no tools/list answer:\n%s", out)
	}
	if !strings.Contains(string(out), `"tasks-create"`) {
		t.Fatalf("tools/list lacks tasks-create:\n%s", out)
	}
}
