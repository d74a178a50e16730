package switchboard_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGoldenRoundTrip pins the wire shape of every contract type: each value
// must encode to its golden file byte for byte, and decoding the golden file
// must give the value back.
func TestGoldenRoundTrip(t *testing.T) {
	ts := time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC)
	cases := map[string]struct {
		value any
		fresh func() any
	}{
		"tool": {value: &switchboard.Tool{
			Name: "tasks.create", Description: "Create a task in a project.", Summary: "Create a task",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"projectId":{"type":"string"},"title":{"type":"string"}},"required":["projectId","title"]}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`),
			Surface:      switchboard.SurfaceAPI, Class: switchboard.ClassMutate, Approval: switchboard.ApprovalHITL,
			CostClass: switchboard.CostCheap, TimeoutMs: 10000, MaxConcurrency: 4,
			UI: &switchboard.UIMeta{RendererID: "task-card", DisplayGroup: "Tasks", Icon: "check"},
			Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{
				Method: "POST", URL: "http://127.0.0.1:8080/api/projects/{projectId}/tasks",
				Headers:   map[string]switchboard.HeaderValue{"X-Api-Key": {Env: "TASKS_API_KEY"}, "Accept": {Value: "application/json"}},
				TimeoutMs: 5000,
			}},
			Origin:  &switchboard.Origin{Source: switchboard.SourcePlugin, Overrides: []switchboard.Source{switchboard.SourceHost}},
			Version: 7,
		}, fresh: func() any { return new(switchboard.Tool) }},
		"browser_tool": {value: &switchboard.Tool{
			Name: "nav.goto", Description: "Navigate the tab to a page.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Surface: switchboard.SurfaceBrowser, Class: switchboard.ClassUI, ViewStateOnly: true, Pinned: true,
			Origin: &switchboard.Origin{Source: switchboard.SourceSession, SessionID: "s1"},
		}, fresh: func() any { return new(switchboard.Tool) }},
		"manifest": {value: &switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion, RunID: "run1", Tools: []switchboard.Tool{{
			Name: "deck.export", Description: "Export a deck.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Surface: switchboard.SurfaceAPI, Class: switchboard.ClassJob,
		}}}, fresh: func() any { return new(switchboard.Manifest) }},
		"search_query": {value: &switchboard.SearchQuery{Query: "create task", Surface: switchboard.SurfaceAPI, Limit: 5, Cursor: "c1"},
			fresh: func() any { return new(switchboard.SearchQuery) }},
		"search_result": {value: &switchboard.SearchResult{Items: []switchboard.SearchHit{{Name: "tasks.create", Summary: "Create a task", Surface: switchboard.SurfaceAPI, Class: switchboard.ClassMutate, Score: 3.5}}, NextCursor: "n"},
			fresh: func() any { return new(switchboard.SearchResult) }},
		"browser_action_request": {value: &switchboard.BrowserActionRequest{ProtocolVersion: switchboard.ProtocolVersion, InvocationID: "inv1", RunID: "run1", Tool: "nav.goto", Input: json.RawMessage(`{"path":"/projects"}`), TimeoutMs: 30000},
			fresh: func() any { return new(switchboard.BrowserActionRequest) }},
		"browser_action_result_ok": {value: &switchboard.BrowserActionResult{ProtocolVersion: switchboard.ProtocolVersion, InvocationID: "inv1", OK: true, Result: json.RawMessage(`{"path":"/projects"}`)},
			fresh: func() any { return new(switchboard.BrowserActionResult) }},
		"browser_action_result_err": {value: &switchboard.BrowserActionResult{ProtocolVersion: switchboard.ProtocolVersion, InvocationID: "inv1", Error: &switchboard.Error{Code: switchboard.CodeNotFound, Message: "no such element"}},
			fresh: func() any { return new(switchboard.BrowserActionResult) }},
		"invocation": {value: &switchboard.Invocation{ID: "inv1", RunID: "run1", Tool: "tasks.create", ToolVersion: 7, Surface: switchboard.SurfaceAPI,
			Caller: "user:admin", Status: switchboard.StatusFailed, Input: json.RawMessage(`{"title":"x"}`),
			Error:      &switchboard.Error{Code: switchboard.CodeUpstreamError, Message: "backend answered 500", Details: map[string]any{"status": float64(500)}},
			InputBytes: 13, CreatedAt: ts, UpdatedAt: ts.Add(time.Second), FinishedAt: ts.Add(time.Second), DurationMs: 1000},
			fresh: func() any { return new(switchboard.Invocation) }},
		"activity_entry": {value: &switchboard.ActivityEntry{ID: 3, Ts: ts, Actor: "agent:claude", Verb: "tool.call", Target: "tasks.create",
			Details: json.RawMessage(`{"invocationId":"inv1"}`), PrevHash: "aa", Hash: "bb"},
			fresh: func() any { return new(switchboard.ActivityEntry) }},
		"error_envelope": {value: &switchboard.ErrorEnvelope{Error: &switchboard.Error{Code: switchboard.CodeSchemaViolation, Message: "at /title: missing", Details: map[string]any{"pointer": "/title"}}},
			fresh: func() any { return new(switchboard.ErrorEnvelope) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := json.MarshalIndent(tc.value, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encoding differs from %s:\n%s", path, cmp.Diff(string(want), string(got)))
			}
			back := tc.fresh()
			if err := json.Unmarshal(want, back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.value, back, cmp.Comparer(sameJSON),
				cmp.Comparer(func(a, b *switchboard.Error) bool {
					return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
				})); diff != "" {
				t.Errorf("round trip differs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHeaderValueRejectsOtherShapes(t *testing.T) {
	var h switchboard.HeaderValue
	for _, bad := range []string{`42`, `{"value":"x"}`, `{"env":""}`, `null`} {
		if err := json.Unmarshal([]byte(bad), &h); err == nil && bad != `null` {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestCodeOf(t *testing.T) {
	wrapped := errors.Join(errors.New("context"), switchboard.Errorf(switchboard.CodeTimeout, "slow"))
	for _, tc := range []struct {
		err  error
		want switchboard.Code
	}{
		{nil, ""},
		{switchboard.Errorf(switchboard.CodeNotFound, "x"), switchboard.CodeNotFound},
		{wrapped, switchboard.CodeTimeout},
		{errors.New("boom"), switchboard.CodeInternal},
	} {
		if got := switchboard.CodeOf(tc.err); got != tc.want {
			t.Errorf("CodeOf(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
	if !errors.Is(switchboard.Errorf(switchboard.CodeNotFound, "gone"), switchboard.ErrNotFound) {
		t.Error("errors.Is does not match a coded error against its sentinel")
	}
	if errors.Is(switchboard.Errorf(switchboard.CodeConflict, "x"), switchboard.ErrNotFound) {
		t.Error("errors.Is matched across codes")
	}
}

func TestCodesAreUniqueAndStatusesTerminal(t *testing.T) {
	seen := map[switchboard.Code]bool{}
	for _, c := range switchboard.Codes {
		if seen[c] {
			t.Errorf("duplicate code %s", c)
		}
		seen[c] = true
	}
	for _, s := range switchboard.InFlight {
		if s.Terminal() {
			t.Errorf("%s is in flight and terminal", s)
		}
	}
	if switchboard.StatusFor(switchboard.CodeTimeout) != switchboard.StatusTimedOut || switchboard.StatusFor("") != switchboard.StatusSucceeded {
		t.Error("StatusFor mapping changed")
	}
}

func TestHashChainDetectsEdits(t *testing.T) {
	e := switchboard.ActivityEntry{ID: 1, Ts: time.Unix(0, 0), Actor: "user:admin", Verb: "tool.call", Target: "a.b"}
	h := e.ComputeHash("")
	e.Target = "a.c"
	if e.ComputeHash("") == h {
		t.Error("hash ignores target")
	}
	e.Target = "a.b"
	if e.ComputeHash("x") == h {
		t.Error("hash ignores the previous hash")
	}
}

// sameJSON compares raw JSON ignoring insignificant whitespace: indenting a
// golden file re-indents the raw schemas inside it.
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
