package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolsDelete: every name is tried and reported; one failure makes the
// exit code 1 with its code; a declaration underneath takes over and says so.
func TestToolsDelete(t *testing.T) {
	url := startDaemon(t)
	g := []string{"--addr", url, "--token", testToken}
	file := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(file, []byte(manifestYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, source := range []string{"core", "host"} {
		if code, _, errs := run(t, append(g, "tools", "register", file, "--source", source)...); code != 0 {
			t.Fatalf("register %s: %d %q", source, code, errs)
		}
	}
	if code, _, errs := run(t, append(g, "tools", "delete", "--source", "core", "tasks.list")...); code != 2 {
		t.Errorf("unknown flag: %d %q", code, errs)
	}

	code, out, errs := run(t, append(g, "tools", "delete", "tasks.nope", "tasks.create")...)
	if code != 1 || !strings.Contains(errs, "tasks.nope: TOOL_NOT_FOUND") ||
		!strings.Contains(errs, "error: TOOL_NOT_FOUND: 1 of 2 tools not deleted: tasks.nope") {
		t.Errorf("one unknown name: exit %d, stderr %q", code, errs)
	}
	if !strings.Contains(out, "deleted the host declaration of tasks.create; its core declaration is now in effect") {
		t.Errorf("the name after the failure was not deleted, or the override not told: %q", out)
	}

	code, out, errs = run(t, append(g, "--json", "tools", "delete", "tasks.create", "media.upload")...)
	var res []deleteOutcome
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res) != 2 || !res[0].Deleted || res[0].Now != "" || res[1].Now != "core" {
		t.Fatalf("--json: exit %d, %q %q", code, out, errs)
	}
	code, out, _ = run(t, append(g, "tools", "list")...)
	if code != 0 || strings.Contains(out, "tasks.create") || !strings.Contains(out, "media.upload") || !strings.Contains(out, "tasks.list") {
		t.Errorf("after delete: %q", out)
	}
	if code, _, errs := run(t, append(g, "tools", "delete")...); code != 2 || !strings.Contains(errs, "expects one or more tool NAMEs") {
		t.Errorf("no names: %d %q", code, errs)
	}
}
