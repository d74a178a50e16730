// Package aguitest runs the protocol packages' own checks (agui's
// testdata/node/check.mjs: @ag-ui/core's zod schemas, @ag-ui/client's
// HttpAgent, the `ai` package's UI Message Stream reader) from Go tests.
// Node and npm are optional: without them, or without registry access for
// the first install, the calling test is skipped. SampleRun is the run
// both encodings' tests (agui, aisdk) check.
package aguitest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/filelock"
)

// installTimeout bounds the one-time `npm ci`.
const installTimeout = 3 * time.Minute

var (
	installOnce sync.Once
	installErr  string
)

// Dir is the directory holding check.mjs and its package.json.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "agui", "testdata", "node")
}

// Require skips t unless node is installed and the packages are (or can
// be) installed.
func Require(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; skipping the protocol packages' checks")
	}
	installOnce.Do(func() {
		dir := Dir()
		// Several test binaries (agui, aisdk, httpapi) run at once under
		// `go test ./...` and share node_modules: one installs while the
		// others wait on the lock, and a finished install is known by its
		// marker, not by a directory that npm ci may still be filling.
		unlock, err := filelock.Lock(filepath.Join(dir, ".npm-install.lock"))
		if err != nil {
			installErr = "lock the npm install: " + err.Error()
			return
		}
		defer unlock()
		marker := filepath.Join(dir, "node_modules", ".switchboard-installed")
		if _, err := os.Stat(marker); err == nil {
			return
		}
		if _, err := exec.LookPath("npm"); err != nil {
			installErr = "npm is not installed"
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			installErr = "npm ci failed: " + err.Error() + ": " + string(out)
			return
		}
		if err := os.WriteFile(marker, nil, 0o644); err != nil {
			installErr = "mark the npm install done: " + err.Error()
		}
	})
	if installErr != "" {
		t.Skip(installErr)
	}
}

// Run runs check.mjs with args and stdin and decodes its JSON answer into
// out. A script that prints {"error": ...} fails t.
func Run(t testing.TB, stdin []byte, out any, args ...string) {
	t.Helper()
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"check.mjs"}, args...)...)
	cmd.Dir = Dir()
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node check.mjs %s: %v\nstdout: %s\nstderr: %s", args[0], err, b, stderr.String())
	}
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	if e.Error != "" && args[0] != "agui" && args[0] != "aisdk" && args[0] != "aisdkresume" {
		t.Fatalf("node check.mjs %s: %s\nstderr: %s", args[0], e.Error, stderr.String())
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("node check.mjs %s printed %s: %v", args[0], b, err)
	}
}
