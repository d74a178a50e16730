package manifest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

const yamlDoc = `
tools:
  - name: tasks.create
    description: Create a task in a project.
    class: mutate
    inputSchema:
      type: object
      properties:
        projectId: {type: string}
        title: {type: string}
      required: [projectId, title]
    binding:
      http:
        method: POST
        url: http://127.0.0.1:8080/api/projects/{projectId}/tasks
        headers:
          X-Api-Key: {env: TASKS_API_KEY}
          Accept: application/json
`

func TestParseYAMLAndJSONAgree(t *testing.T) {
	t.Parallel()
	y, err := Parse([]byte(yamlDoc), ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	tool := y.Tools[0]
	if tool.Name != "tasks.create" || tool.Class != switchboard.ClassMutate {
		t.Fatalf("parsed %+v", tool)
	}
	h := tool.Binding.HTTP.Headers
	if h["X-Api-Key"].Env != "TASKS_API_KEY" || h["Accept"].Value != "application/json" {
		t.Errorf("headers = %+v", h)
	}
	j, err := Parse([]byte(`[{"name":"tasks.list","description":"List tasks.","class":"read"}]`), "")
	if err != nil || len(j.Tools) != 1 || j.ProtocolVersion == "" {
		t.Fatalf("json array: %v %+v", err, j)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ doc, ext string }{
		"yaml syntax":   {"tools: [\n  - name: x\n bad", ".yaml"},
		"json syntax":   {`{"tools": [`, ".json"},
		"unknown field": {`{"tools": [{"name": "a.b", "descripton": "typo"}]}`, ".json"},
		"no tools":      {`{"protocolVersion": "x"}`, ".json"},
	} {
		if _, err := Parse([]byte(tc.doc), tc.ext); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Errorf("%s: got %v, want INVALID_INPUT", name, err)
		}
	}
}

func TestLoadNamesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("tools: {"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("got %v", err)
	}
}

// aliasBomb is the reported YAML billion laughs in mappings (which slip
// under the YAML library's own alias-ratio check for longer): each level
// names the level below four times, twelve levels deep.
var aliasBomb = func() string {
	var b strings.Builder
	b.WriteString("l0: &l0 {s: lollollollollollollollollollollollollollollollol}\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "l%d: &l%d {a: *l%d, b: *l%d, c: *l%d, d: *l%d}\n", i, i, i-1, i-1, i-1, i-1)
	}
	return b.String() + "tools: []\n"
}()

// TestParseRefusesAliasBomb: the manifest reader follows aliases under
// the shared budget (internal/yamlbudget) and refuses the bomb with
// PAYLOAD_TOO_LARGE instead of expanding it.
func TestParseRefusesAliasBomb(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(aliasBomb), ".yaml")
	if e := switchboard.AsError(err); e.Code != switchboard.CodePayloadTooLarge || !strings.Contains(e.Message, "aliases") {
		t.Fatalf("Parse = %v, want PAYLOAD_TOO_LARGE about aliases", err)
	}
}

// FuzzParse: any document parses or fails with INVALID_INPUT (or
// PAYLOAD_TOO_LARGE past a budget); a syntax
// error's position lies inside the document.
func FuzzParse(f *testing.F) {
	f.Add([]byte("{\"tools\": [\n  {\"name\": \"a.b\",}\n]}"), true)
	f.Add([]byte("tools:\n  - name: x\n\tdescription: y\n"), false)
	f.Add([]byte("[{\"name\": \"a.b\", \"description\": \"x\", \"class\": \"read\"}]"), true)
	f.Add([]byte(aliasBomb), false)
	f.Add([]byte("a: &a [*a]\n"), false)
	f.Fuzz(func(t *testing.T, b []byte, isJSON bool) {
		ext := ".yaml"
		if isJSON {
			ext = ".json"
		}
		_, err := Parse(b, ext)
		if err == nil {
			return
		}
		e := switchboard.AsError(err)
		if e.Code != switchboard.CodeInvalidInput && e.Code != switchboard.CodePayloadTooLarge {
			t.Fatalf("code %s: %v", e.Code, err)
		}
		if pos, ok := e.Details.(map[string]int); ok && (pos["line"] < 1 || pos["column"] < 1 || pos["line"] > strings.Count(string(b), "\n")+1) {
			t.Fatalf("position %v outside the document: %v", pos, err)
		}
	})
}

// TestTypoHasLineAndSuggestion: a misspelt key is reported at its line with
// the key it most likely meant, in YAML and JSON, at any depth.
func TestTypoHasLineAndSuggestion(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ doc, ext, want string }{
		"yaml tool": {"tools:\n  - name: a.b\n    descripton: typo\n    class: read\n", ".yaml",
			`unknown field "tools[0].descripton" at line 3, column 5; did you mean description?`},
		"yaml binding": {"tools:\n  - name: a.b\n    description: x\n    class: read\n    binding:\n      http: {methd: GET, url: 'http://x/'}\n", ".yaml",
			`unknown field "tools[0].binding.http.methd" at line 6, column 14; did you mean method?`},
		"json array": {"[\n {\"name\": \"a.b\",\n  \"clas\": \"read\"}]", ".json",
			`unknown field "[0].clas" at line 3, column 3; did you mean class?`},
		"no suggestion": {"tools:\n  - name: a.b\n    zzzzzz: 1\n", ".yaml",
			`unknown field "tools[0].zzzzzz" at line 3, column 5 (tools[0] takes name,`},
	} {
		_, err := Parse([]byte(c.doc), c.ext)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// A manifest's panels and adapters sections: parsed with the tools, the
// spec kept as JSON, the adapter's path-only URLs resolved like a tool's.
func TestManifestPanelsAndAdapters(t *testing.T) {
	doc := `
tools:
  - name: projects.archive
    description: Archive a project.
    inputSchema: {type: object}
    surface: api
    class: mutate
    binding: {http: {method: POST, url: /app/archive}}
adapters:
  - name: projects
    description: the studio's projects
    query: {method: POST, url: /app/projects/query}
    mutate:
      update: {method: PUT, url: "http://127.0.0.1:3000/projects/{key}"}
    approval: {update: hitl}
panels:
  - id: project.settings
    title: Project settings
    description: Edit one project.
    contextKinds: [project]
    spec:
      v: 1
      root: body
      nodes:
        body: {type: body, props: {title: Settings}}
`
	m, err := Parse([]byte(doc), ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	Resolve(&m, "http://127.0.0.1:7766")
	if len(m.Tools) != 1 || len(m.Adapters) != 1 || len(m.Panels) != 1 {
		t.Fatalf("parsed %d tools, %d adapters, %d panels", len(m.Tools), len(m.Adapters), len(m.Panels))
	}
	a := m.Adapters[0]
	if a.Query.URL != "http://127.0.0.1:7766/app/projects/query" || a.Mutate["update"].URL != "http://127.0.0.1:3000/projects/{key}" || a.Approval["update"] != switchboard.ApprovalHITL {
		t.Fatalf("adapter = %+v (update %+v)", a, a.Mutate["update"])
	}
	p := m.Panels[0]
	var spec struct {
		Root  string
		Nodes map[string]struct{ Type string }
	}
	if err := json.Unmarshal(p.Spec, &spec); err != nil || spec.Root != "body" || spec.Nodes["body"].Type != "body" || p.ContextKinds[0] != "project" {
		t.Fatalf("panel = %+v, spec %s (%v)", p, p.Spec, err)
	}
	// Only panels: still a manifest. A misspelt section: refused.
	if _, err := Parse([]byte(`{"panels": [{"id": "a", "title": "A", "description": "A.", "spec": {}}]}`), ".json"); err != nil {
		t.Fatalf("a manifest of panels only: %v", err)
	}
	if _, err := Parse([]byte(`{"tools": [], "panel": []}`), ".json"); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("a misspelt panels section: %v", err)
	}
}
