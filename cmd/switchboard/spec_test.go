package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/panelspec"
)

func writeSpec(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "panel.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const brokenSpec = `{"v": 1, "origin": "agent", "root": "body",
 "nodes": {
  "body": {"type": "panel-body", "props": {"title": "Broken"}, "children": ["h", "go", "ln"]},
  "h":    {"type": "heading", "props": {"text": "Hi", "levl": 2}},
  "go":   {"type": "button", "props": {"label": "Go", "action": "https://evil.example"}},
  "ln":   {"type": "link", "props": {"href": "javascript:alert(1)", "label": "x"}}
 }}`

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	valid := panelspec.Examples()[0].Spec

	t.Run("a valid spec exits 0", func(t *testing.T) {
		code, out, errOut := run(t, "spec", "validate", writeSpec(t, string(valid)))
		if code != 0 || !strings.Contains(out, "spec is valid") || errOut != "" {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})

	t.Run("issues are printed for people, grouped by node, and exit 1", func(t *testing.T) {
		code, out, errOut := run(t, "spec", "validate", writeSpec(t, brokenSpec))
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s", code, out)
		}
		for _, want := range []string{
			`node "h"`, "SPEC_PROPS", "/nodes/h/props/levl", `did you mean "level"?`,
			`node "go"`, "SPEC_ACTION", "actions are declared, never URLs",
			`node "ln"`, "SPEC_UNSAFE", "/nodes/ln/props/href",
			"3 errors, 0 warnings",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
		if !strings.HasPrefix(errOut, "error: SPEC_") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("stderr should be one coded line, got %q", errOut)
		}
	})

	t.Run("--json prints the issues", func(t *testing.T) {
		code, out, _ := run(t, "spec", "validate", "--json", writeSpec(t, brokenSpec))
		if code != 1 {
			t.Fatalf("exit %d", code)
		}
		var res struct {
			Valid  bool              `json:"valid"`
			Issues []panelspec.Issue `json:"issues"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		codes := map[string]bool{}
		for _, is := range res.Issues {
			codes[string(is.Code)] = true
			if is.Pointer == "" || is.NodeID == "" {
				t.Errorf("issue without pointer or node: %+v", is)
			}
		}
		if res.Valid || !codes["SPEC_PROPS"] || !codes["SPEC_ACTION"] || !codes["SPEC_UNSAFE"] {
			t.Fatalf("got %+v", res)
		}
	})

	t.Run("--json on a valid spec", func(t *testing.T) {
		code, out, _ := run(t, "spec", "validate", "--json", writeSpec(t, string(valid)))
		if code != 0 || !strings.Contains(out, `"valid": true`) || !strings.Contains(out, `"issues": []`) {
			t.Fatalf("exit %d: %s", code, out)
		}
	})

	t.Run("warnings alone exit 0", func(t *testing.T) {
		spec := `{"v":1,"origin":"host","root":"b","nodes":{"b":{"type":"panel-body","children":["m"]},"m":{"type":"map-view","props":{"lat":1}}}}`
		code, out, _ := run(t, "spec", "validate", writeSpec(t, spec))
		if code != 0 || !strings.Contains(out, "SPEC_UNKNOWN_TYPE") || !strings.Contains(out, "0 errors, 1 warning") {
			t.Fatalf("exit %d: %s", code, out)
		}
	})

	t.Run("a parse failure", func(t *testing.T) {
		code, out, _ := run(t, "spec", "validate", writeSpec(t, `{"v": 1, "v": 2}`))
		if code != 1 || !strings.Contains(out, "SPEC_PARSE") {
			t.Fatalf("exit %d: %s", code, out)
		}
	})

	t.Run("stdin and usage errors", func(t *testing.T) {
		if code, out, _ := runIn(t, brokenSpec, "spec", "validate", "-"); code != 1 || !strings.Contains(out, "SPEC_UNSAFE") {
			t.Fatalf("stdin: exit %d: %s", code, out)
		}
		if code, _, _ := run(t, "spec", "validate"); code != 2 {
			t.Fatalf("no FILE: exit %d, want 2", code)
		}
		if code, _, errOut := run(t, "spec", "validate", filepath.Join(t.TempDir(), "nope.json")); code != 1 || !strings.Contains(errOut, "INVALID_INPUT") {
			t.Fatalf("missing file: exit %d %s", code, errOut)
		}
	})
}
