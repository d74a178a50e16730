package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// petBackend serves the operations of testdata/openapi/petstore-expanded.yaml
// under /api and remembers the last query it saw.
type petBackend struct {
	mu        sync.Mutex
	pets      map[int]map[string]any
	lastQuery string
}

func newPetBackend(t *testing.T) (*petBackend, string) {
	t.Helper()
	pb := &petBackend{pets: map[int]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/pets", func(w http.ResponseWriter, r *http.Request) {
		pb.mu.Lock()
		defer pb.mu.Unlock()
		pb.lastQuery = r.URL.RawQuery
		out := []map[string]any{}
		for _, p := range pb.pets {
			out = append(out, p)
		}
		json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("POST /api/pets", func(w http.ResponseWriter, r *http.Request) {
		var p map[string]any
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p["name"] == nil {
			http.Error(w, `{"code":400,"message":"name is required"}`, http.StatusBadRequest)
			return
		}
		pb.mu.Lock()
		defer pb.mu.Unlock()
		p["id"] = len(pb.pets) + 1
		pb.pets[len(pb.pets)+1] = p
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(p)
	})
	mux.HandleFunc("GET /api/pets/{id}", func(w http.ResponseWriter, r *http.Request) {
		pb.mu.Lock()
		defer pb.mu.Unlock()
		var id int
		fmt.Sscan(r.PathValue("id"), &id)
		p, ok := pb.pets[id]
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"code":404,"message":"no pet %d"}`, id)
			return
		}
		json.NewEncoder(w).Encode(p)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return pb, srv.URL
}

// runIn executes the CLI with stdin.
func runIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestImportAndCallFromTheShell(t *testing.T) {
	url := startDaemon(t)
	pb, backend := newPetBackend(t)
	g := []string{"--addr", url, "--token", testToken}
	spec := filepath.Join("..", "..", "testdata", "openapi", "petstore-expanded.yaml")

	code, out, errs := run(t, append(g, "tools", "import-openapi", spec, "--base-url", backend+"/api", "--dry-run")...)
	if code != 0 || !strings.Contains(out, "Would import 4 tools") || !strings.Contains(out, "pets.delete_pet") || !strings.Contains(out, "approval: hitl") {
		t.Fatalf("dry run: %d %q %q", code, out, errs)
	}
	if _, out, _ := run(t, append(g, "tools", "list")...); strings.Contains(out, "pets.") {
		t.Fatalf("a dry run registered tools:\n%s", out)
	}
	code, out, errs = run(t, append(g, "tools", "import-openapi", spec, "--base-url", backend+"/api")...)
	if code != 0 || !strings.Contains(out, "Imported 4 tools") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}

	// Generated commands: namespaces, verbs, help, a call.
	code, out, _ = run(t, append(g, "run")...)
	if code != 0 || !strings.Contains(out, "pets") {
		t.Fatalf("run: %d %q", code, out)
	}
	code, out, _ = run(t, append(g, "run", "pets")...)
	if code != 0 || !strings.Contains(out, "switchboard run pets add_pet") {
		t.Fatalf("run pets: %d %q", code, out)
	}
	code, out, _ = run(t, append(g, "run", "pets", "find_pets", "--help")...)
	if code != 0 || !strings.Contains(out, "--limit int") || !strings.Contains(out, "--tags strings") || !strings.Contains(out, "maximum number of results") {
		t.Fatalf("help: %d %q", code, out)
	}
	code, out, errs = run(t, append(g, "run", "pets", "add_pet", "--name", "Rex", "--tag", "dog")...)
	if code != 0 || !strings.Contains(out, `"name": "Rex"`) || !strings.Contains(out, `"id": 1`) {
		t.Fatalf("run add_pet: %d %q %q", code, out, errs)
	}
	code, _, errs = run(t, append(g, "run", "pets.find_pets", "--tags", "a,b", "--tags", "c", "--limit", "2")...)
	if code != 0 || pb.lastQuery != "limit=2&tags=a&tags=b&tags=c" {
		t.Fatalf("run find_pets: %d %q backend saw %q", code, errs, pb.lastQuery)
	}

	// Usage errors: exit 2, before anything is called.
	code, _, errs = run(t, append(g, "run", "pets", "add_pet", "--tag", "x")...)
	if code != 2 || !strings.Contains(errs, "missing required flag(s): --name") {
		t.Fatalf("missing flag: %d %q", code, errs)
	}
	code, _, errs = run(t, append(g, "run", "pets", "find_pet_by_id", "--id", "seven")...)
	if code != 2 || !strings.Contains(errs, "not an integer") {
		t.Fatalf("bad integer: %d %q", code, errs)
	}
	code, _, errs = run(t, append(g, "run", "pets", "nope")...)
	if code != 1 || !strings.Contains(errs, "TOOL_NOT_FOUND") {
		t.Fatalf("unknown verb: %d %q", code, errs)
	}

	// tools call with literal, file and stdin input.
	code, out, errs = run(t, append(g, "tools", "call", "pets.find_pet_by_id", "--input", `{"id":1}`)...)
	if code != 0 || !strings.Contains(out, `"name": "Rex"`) {
		t.Fatalf("call: %d %q %q", code, out, errs)
	}
	file := filepath.Join(t.TempDir(), "in.json")
	os.WriteFile(file, []byte(`{"name":"Tom","tag":"cat"}`), 0o600)
	if code, out, errs = run(t, append(g, "tools", "call", "pets.add_pet", "--input", "@"+file)...); code != 0 || !strings.Contains(out, "Tom") {
		t.Fatalf("call @file: %d %q %q", code, out, errs)
	}
	if code, out, errs = runIn(t, `{"name":"Kit"}`, append(g, "--json", "tools", "call", "pets.add_pet", "--input", "-")...); code != 0 {
		t.Fatalf("call stdin: %d %q %q", code, out, errs)
	}
	var resp struct {
		InvocationID string          `json:"invocationId"`
		Status       string          `json:"status"`
		Result       json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || resp.InvocationID == "" || resp.Status != "succeeded" {
		t.Fatalf("--json: %q %v", out, err)
	}

	// A backend failure: exit 1, the code, the status and the invocation.
	code, _, errs = run(t, append(g, "tools", "call", "pets.find_pet_by_id", "--input", `{"id":99}`)...)
	if code != 1 || !strings.Contains(errs, "UPSTREAM_ERROR") || !strings.Contains(errs, `"status":404`) || !strings.Contains(errs, "no pet 99") || !strings.Contains(errs, "invocation: ") {
		t.Fatalf("upstream failure: %d %q", code, errs)
	}
	code, _, errs = run(t, append(g, "tools", "call", "pets.add_pet", "--input", `{"name":5}`)...)
	if code != 1 || !strings.Contains(errs, "SCHEMA_VIOLATION") || !strings.Contains(errs, "/name") {
		t.Fatalf("schema violation: %d %q", code, errs)
	}
	code, _, errs = run(t, append(g, "tools", "call", "pets.add_pet", "--input", `[1]`)...)
	if code != 2 || !strings.Contains(errs, "JSON object") {
		t.Fatalf("non-object input: %d %q", code, errs)
	}
	code, _, errs = run(t, append(g, "tools", "call", "nope.tool")...)
	if code != 1 || !strings.Contains(errs, "TOOL_NOT_FOUND") {
		t.Fatalf("unknown tool: %d %q", code, errs)
	}
}

func TestImportReportsUnsupported(t *testing.T) {
	url := startDaemon(t)
	g := []string{"--addr", url, "--token", testToken}
	spec := filepath.Join("..", "..", "testdata", "openapi", "uspto.yaml")
	code, out, errs := run(t, append(g, "tools", "import-openapi", spec, "--header", "X-Api-Key=env:USPTO_KEY")...)
	if code != 0 || !strings.Contains(out, "Skipped 1 operation:") || !strings.Contains(out, "x-www-form-urlencoded") {
		t.Fatalf("%d %q %q", code, out, errs)
	}
	// A literal credential is refused by the registry.
	code, _, errs = run(t, append(g, "tools", "import-openapi", spec, "--header", "X-Api-Key=s3cret")...)
	if code != 1 || !strings.Contains(errs, "credential") {
		t.Fatalf("literal secret: %d %q", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("swagger: \"1.2\"\n"), 0o600)
	code, _, errs = run(t, append(g, "tools", "import-openapi", bad, "--base-url", "http://127.0.0.1:1")...)
	if code != 1 || !strings.Contains(errs, "INVALID_INPUT") {
		t.Fatalf("bad document: %d %q", code, errs)
	}
}
