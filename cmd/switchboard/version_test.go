package main

import (
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func TestVersion(t *testing.T) {
	code, out, errOut := run(t, "version", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Module != "github.com/switchboardhq/switchboard" || v.Version == "" || v.GoVersion != runtime.Version() {
		t.Errorf("build fields: %+v", v)
	}
	if v.Protocols.Switchboard != switchboard.ProtocolVersion || !slices.Contains(v.Protocols.MCP, "2025-11-25") || !slices.Contains(v.Protocols.MCP, "2026-07-28") {
		t.Errorf("protocols: %+v", v.Protocols)
	}
	code, out, _ = run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "switchboard ") || !strings.Contains(out, "MCP 2026-07-28") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("text output (exit %d):\n%s", code, out)
	}
	if code, _, _ := run(t, "version", "extra"); code != 2 {
		t.Errorf("an argument: exit %d, want 2", code)
	}
}
