package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// registerManifest registers manifestYAML on the daemon at url.
func registerManifest(t *testing.T, url string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(file, []byte(manifestYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "--addr", url, "--token", testToken, "tools", "register", file); code != 0 {
		t.Fatalf("register: %d %q", code, errs)
	}
}

// TestCallBodyWithoutInputWrapper: a tool's fields sent at the top level of
// a call body are told how to wrap them, not only that a field is unknown.
func TestCallBodyWithoutInputWrapper(t *testing.T) {
	url := startDaemon(t)
	registerManifest(t, url)
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/tools/tasks.create/call",
		strings.NewReader(`{"projectId": "p1", "title": "x"}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env switchboard.ErrorEnvelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Error == nil {
		t.Fatalf("status %d, decode %v", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusBadRequest || env.Error.Code != switchboard.CodeInvalidInput ||
		!strings.Contains(env.Error.Message, `{"input": {"projectId": ...}}`) {
		t.Errorf("status %d, %s: %s", resp.StatusCode, env.Error.Code, env.Error.Message)
	}
}

// TestServeOnABusyPort: an address already in use is UNAVAILABLE, named,
// and said to be in use, not INTERNAL.
func TestServeOnABusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("SWITCHBOARD_STORE", "")
	addr := ln.Addr().String()
	code, _, errs := run(t, "serve", "--addr", addr, "--data", t.TempDir(), "--token", testToken)
	if code != 1 || !strings.Contains(errs, "error: UNAVAILABLE: cannot listen on "+addr+": the address is already in use") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// TestServeConfigErrorsInTheFilesTerms: a bad config file is reported with
// its name, line and column and the key as written in it, never the Go type
// it decodes into.
func TestServeConfigErrorsInTheFilesTerms(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ yaml, want string }{
		"misspelt key":    {"governance:\n  approvalTTl: 5m\n", `:2:3: unknown key "governance.approvalTTl"; did you mean approvalTTL?`},
		"unknown top key": {"adr: 127.0.0.1:1\n", `:1:1: unknown key "adr"; did you mean addr?`},
		"nested key":      {"models:\n  default:\n    provider: openai\n    modle: x\n", `:4:5: unknown key "models.default.modle"; did you mean model?`},
		"bad duration":    {"governance:\n  approvalTTL: soon\n", `:2:16: governance.approvalTTL must be a duration such as 90s, 5m or 1h30m, not "soon"`},
		"bad number":      {"governance:\n  rateLimit:\n    perAgent: {perSecond: fast}\n", `:3:27: governance.rateLimit.perAgent.perSecond must be a number, not "fast"`},
		"syntax":          {"governance: [\n", `:2:1: not valid YAML: did not find expected node content`},
		"empty":           {"", `: the file is empty`},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errs := run(t, "serve", "--config", path, "--data", dir, "--addr", "127.0.0.1:1")
		if code != 1 || !strings.Contains(errs, "INVALID_INPUT: config "+path+tc.want) || strings.Contains(errs, "main.") {
			t.Errorf("%s: exit %d, stderr %q\nwant it to contain %q", name, code, errs, "config "+path+tc.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"list", "search", "describe", "register", "delete", "call", "import-openapi"}
	for _, tc := range []struct {
		word string
		want []string
	}{
		{"lst", []string{"list"}},
		{"serch", []string{"search"}},
		{"desc", []string{"describe"}},
		{"regsiter", []string{"register"}},
		{"LIST", []string{"list"}},
		{"xyz", nil},
		{"", nil},
	} {
		if got := suggest(tc.word, names); !slices.Equal(got, tc.want) {
			t.Errorf("suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := suggest("titel", []string{"projectId", "title", "tag"}); !slices.Equal(got, []string{"title"}) {
		t.Errorf("a transposition is one edit: %q", got)
	}
	if got := orList([]string{"a", "b", "c"}); got != "a, b or c" {
		t.Errorf("orList: %q", got)
	}
}

// FuzzDecodeConfig: any file either decodes or fails with an error that
// names it; none panics.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte("governance:\n  approvalTTL: 5m\n  rateLimit: {perAgent: {perSecond: 2}}\n"))
	f.Add([]byte("models:\n  default: &m {provider: openai, model: x}\n  other: *m\n"))
	f.Add([]byte("allowOrigins: [a, b]\nmcp: {mode: full}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var cfg serveConfig
		if err := decodeConfig("f.yaml", b, &cfg); err != nil && !strings.HasPrefix(err.Error(), "config f.yaml") {
			t.Fatalf("error without the file's name: %v", err)
		}
	})
}

// TestClientCommandsReadTheConfigFile: `--config FILE` gives client
// commands the daemon address and the data root (so its token) that serve
// reads from it; flags and the environment still win over the file.
func TestClientCommandsReadTheConfigFile(t *testing.T) {
	url := startDaemon(t)
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, daemon.TokenFile), []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "sb.yaml")
	if err := os.WriteFile(cfg, []byte("addr: "+strings.TrimPrefix(url, "http://")+"\ndata: "+data+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"SWITCHBOARD_ADDR", "SWITCHBOARD_DATA", "SWITCHBOARD_TOKEN"} {
		t.Setenv(v, "")
	}
	for _, args := range [][]string{
		{"--config", cfg, "tools", "list", "--json"},
		{"tools", "list", "--json", "--config", cfg},
		{"approvals", "list", "--config", cfg},
		{"run", "--config", cfg},
	} {
		if code, _, errs := run(t, args...); code != 0 {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
	if code, _, errs := run(t, "--config", cfg, "--addr", "127.0.0.1:1", "tools", "list"); code != 1 || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("--addr wins over the file: exit %d, %q", code, errs)
	}
	if code, _, errs := run(t, "run", "--config", cfg, "--addr", "127.0.0.1:1"); code != 1 || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("run: --addr wins over the file: exit %d, %q", code, errs)
	}
	if code, _, errs := run(t, "--config", cfg, "--data", t.TempDir(), "tools", "list"); code != 1 || !strings.Contains(errs, "UNAUTHORIZED: no token") {
		t.Errorf("--data wins over the file: exit %d, %q", code, errs)
	}
	t.Setenv("SWITCHBOARD_ADDR", "127.0.0.1:1")
	if code, _, errs := run(t, "--config", cfg, "tools", "list"); code != 1 || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("$SWITCHBOARD_ADDR wins over the file: exit %d, %q", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("adr: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "--config", bad, "tools", "list"); code != 1 || !strings.Contains(errs, "INVALID_INPUT: config "+bad+":1:1: unknown key \"adr\"; did you mean addr?") {
		t.Errorf("a bad file: exit %d, %q", code, errs)
	}
}

// TestManifestSyntaxErrorsHaveLineAndColumn: a JSON or YAML manifest that
// does not parse is reported at its line and column.
func TestManifestSyntaxErrorsHaveLineAndColumn(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ text, want string }{
		"bad.json":  {"{\"tools\": [\n  {\"name\": \"a.b\",\n   \"class\": \"read\",}\n]}\n", "bad.json: not valid JSON at line 3, column 20: invalid character '}'"},
		"cut.json":  {`{"tools": [`, "cut.json: not valid JSON at line 1, column 11: unexpected end of JSON input"},
		"tab.yaml":  {"tools:\n  - name: x\n\tdescription: y\n", "tab.yaml: not valid YAML at line 3, column 1: found a tab character"},
		"flow.yaml": {"tools: [\n  {name: x,\n", "flow.yaml: not valid YAML at line 3, column 1:"},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errs := run(t, "tools", "register", path, "--addr", "127.0.0.1:1", "--token", "x")
		if code != 1 || !strings.Contains(errs, "INVALID_INPUT: "+filepath.Join(dir, tc.want)) {
			t.Errorf("%s: exit %d, stderr %q\nwant it to contain %q", name, code, errs, tc.want)
		}
	}
	code, _, errs := run(t, "--json", "tools", "register", filepath.Join(dir, "bad.json"), "--addr", "127.0.0.1:1", "--token", "x")
	var env struct {
		Error struct {
			Details struct{ Line, Column int } `json:"details"`
		} `json:"error"`
	}
	if code != 1 || json.Unmarshal([]byte(errs), &env) != nil || env.Error.Details.Line != 3 || env.Error.Details.Column != 20 {
		t.Errorf("--json details: exit %d, %q", code, errs)
	}
}

// TestDidYouMean: a mistyped subcommand, tool name or generated flag gets
// the nearest real ones, and the usage hint names the command that has them.
func TestDidYouMean(t *testing.T) {
	url := startDaemon(t)
	registerManifest(t, url)
	g := []string{"--addr", url, "--token", testToken}
	for _, tc := range []struct {
		args []string
		exit int
		want []string
	}{
		{[]string{"tools", "lst"}, 2, []string{`unknown command "lst" for "switchboard tools"; did you mean list?`, "Run 'switchboard tools --help'"}},
		{[]string{"tols"}, 2, []string{`unknown command "tols" for "switchboard"; did you mean tools`}},
		{[]string{"approvals", "aprove", "x"}, 2, []string{"did you mean approve?"}},
		{[]string{"tools", "list", "--surfac", "api"}, 2, []string{"unknown flag: --surfac; did you mean --surface?", "Run 'switchboard tools list --help'"}},
		{[]string{"tools", "describe", "tasks.creat"}, 1, []string{"TOOL_NOT_FOUND", "did you mean tasks.create?"}},
		{[]string{"tools", "call", "tasks.creat", "--input", `{"projectId":"p1","title":"x"}`}, 1, []string{"TOOL_NOT_FOUND", "did you mean tasks.create?"}},
		{[]string{"tools", "delete", "tasks.lst"}, 1, []string{"tasks.lst: TOOL_NOT_FOUND", "did you mean tasks.list?"}},
		{[]string{"run", "tasks", "creat", "--title", "x"}, 1, []string{"TOOL_NOT_FOUND", "did you mean tasks.create?"}},
		{[]string{"run", "taks"}, 1, []string{"did you mean tasks?"}},
		{[]string{"run", "tasks", "create", "--titel", "x"}, 2, []string{"unknown flag: --titel; did you mean --title?", "Run 'switchboard run tasks create --help' for usage."}},
		{[]string{"run", "tasks", "create", "--title", "x"}, 2, []string{"missing required flag(s): --project-id", "Run 'switchboard run tasks create --help' for usage."}},
	} {
		code, _, errs := run(t, append(g, tc.args...)...)
		ok := code == tc.exit
		for _, w := range tc.want {
			ok = ok && strings.Contains(errs, w)
		}
		if !ok {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, tc.exit, tc.want)
		}
	}
	// Nothing near: no suggestion, the plain message.
	if code, _, errs := run(t, append(g, "tools", "describe", "zzz.qqq")...); code != 1 || strings.Contains(errs, "did you mean") {
		t.Errorf("nothing near: %d %q", code, errs)
	}
}

// TestStoreConfigForms: `store:` is a URL or a mapping with durability; a
// durability the daemon does not know is refused in the file's terms.
func TestStoreConfigForms(t *testing.T) {
	for _, tc := range []struct{ file, url, durability string }{
		{"store: postgres://db/x\n", "postgres://db/x", ""},
		{"store: {url: postgres://db/x, durability: power}\n", "postgres://db/x", "power"},
		{"store:\n  durability: process\n", "", "process"},
	} {
		var cfg serveConfig
		if err := decodeConfig("f.yaml", []byte(tc.file), &cfg); err != nil {
			t.Fatalf("%q: %v", tc.file, err)
		}
		if cfg.Store.URL != tc.url || cfg.Store.Durability != tc.durability {
			t.Errorf("%q: %+v", tc.file, cfg.Store)
		}
	}
	var cfg serveConfig
	err := decodeConfig("f.yaml", []byte("store: {durability: disk}\n"), &cfg)
	if err == nil || !strings.Contains(err.Error(), "f.yaml") || !strings.Contains(err.Error(), "use process") {
		t.Fatalf("bad durability: %v", err)
	}
}

// TestServeSaysItStartsFirst: serve says it is starting before it touches
// the data root or opens the store (migrating a store and building the
// catalog can take a while on a busy machine, and a silent terminal looks
// hung), so even a start that fails there has said so first.
func TestServeSaysItStartsFirst(t *testing.T) {
	t.Setenv("SWITCHBOARD_STORE", "")
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "serve", "--addr", "127.0.0.1:0", "--data", notDir, "--token", testToken)
	started, failed := strings.Index(errs, "switchboard serve starting"), strings.Index(errs, "error:")
	if code != 1 || started < 0 || failed < started {
		t.Errorf("exit %d, stderr %q: want the start said before the data root's error", code, errs)
	}
}

// TestShowUnknownID: show and the other one-record commands answer an
// unknown id with the code and the record's kind, in the words `sessions
// show` uses, and no store operation ("job get: ...") ahead of them.
func TestShowUnknownID(t *testing.T) {
	_, srv := newTestDaemon(t)
	g := []string{"--addr", srv.URL, "--token", testToken}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "show", "job_nope"}, `error: NOT_FOUND: no job "job_nope"` + "\n"},
		{[]string{"jobs", "cancel", "job_nope"}, `error: NOT_FOUND: no job "job_nope"` + "\n"},
		{[]string{"tasks", "show", "task_nope"}, `error: NOT_FOUND: no task "task_nope"` + "\n"},
		{[]string{"tasks", "cancel", "task_nope"}, `error: NOT_FOUND: no task "task_nope"` + "\n"},
		{[]string{"invocation", "inv_nope"}, `error: NOT_FOUND: no invocation "inv_nope"` + "\n"},
		{[]string{"approvals", "approve", "apr_nope"}, `error: NOT_FOUND: no approval "apr_nope"` + "\n"},
	} {
		if code, _, errs := run(t, append(g, tc.args...)...); code != 1 || errs != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and %q", tc.args, code, errs, tc.want)
		}
	}
}
