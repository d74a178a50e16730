package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestAgentsCommands: `agents list` shows the sessions at work as a table
// (and as JSON with --json), `agents show` one of them, `agents interrupt`
// cancels it; interrupting it again is CONFLICT and an unknown id
// AGENT_NOT_FOUND, each with exit code 1.
func TestAgentsCommands(t *testing.T) {
	ctx := context.Background()
	_, srv := newTestDaemon(t)
	cl := client.New(srv.URL, testToken, nil)
	voice, err := cl.RegisterAgent(ctx, client.AgentSpec{Kind: switchboard.AgentVoice, Label: "Voice desk", Task: "taking notes"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.RegisterAgent(ctx, client.AgentSpec{Kind: switchboard.AgentVoice, Label: "Second voice", Status: switchboard.AgentRunning}); err != nil {
		t.Fatal(err)
	}
	admin := []string{"--addr", srv.URL, "--token", testToken}

	code, out, errs := run(t, append(admin, "agents", "list")...)
	if code != 0 || !strings.Contains(out, "ID") || !strings.Contains(out, "STATUS") || !strings.Contains(out, voice.ID) ||
		!strings.Contains(out, "Voice desk") || !strings.Contains(out, "taking notes") || !strings.Contains(errs, "2 agent sessions") {
		t.Fatalf("agents list: %d %q %q", code, out, errs)
	}
	code, out, _ = run(t, append(admin, "--json", "agents", "list", "--status", "running")...)
	var items []switchboard.AgentSession
	if code != 0 || json.Unmarshal([]byte(out), &items) != nil || len(items) != 1 || items[0].Label != "Second voice" {
		t.Fatalf("agents list --json --status running: %d %q", code, out)
	}
	code, out, _ = run(t, append(admin, "agents", "show", voice.ID)...)
	if code != 0 || !strings.Contains(out, "kind:") || !strings.Contains(out, "voice") || !strings.Contains(out, "transport:") || !strings.Contains(out, "host") {
		t.Fatalf("agents show: %d %q", code, out)
	}

	code, out, errs = run(t, append(admin, "agents", "interrupt", voice.ID)...)
	if code != 0 || !strings.Contains(out, voice.ID+" cancelled: interrupted by user:admin") {
		t.Fatalf("agents interrupt: %d %q %q", code, out, errs)
	}
	if a, err := cl.Agent(ctx, voice.ID); err != nil || a.Status != switchboard.AgentCancelled {
		t.Fatalf("after interrupt: %+v %v", a, err)
	}
	code, _, errs = run(t, append(admin, "agents", "interrupt", voice.ID)...)
	if code != 1 || !strings.Contains(errs, "CONFLICT") {
		t.Errorf("interrupt again: %d %q", code, errs)
	}
	code, _, errs = run(t, append(admin, "--json", "agents", "show", "agt_nope")...)
	var env switchboard.ErrorEnvelope
	if code != 1 || json.Unmarshal([]byte(errs), &env) != nil || env.Error.Code != switchboard.CodeAgentNotFound {
		t.Errorf("unknown agent: %d %q", code, errs)
	}
	code, out, _ = run(t, append(admin, "agents", "list", "--active", "-q")...)
	if code != 0 || strings.Contains(out, voice.ID) || len(strings.Fields(out)) != 1 {
		t.Errorf("agents list --active -q: %d %q", code, out)
	}
	code, _, errs = run(t, append(admin, "agents", "list", "--kind", "robot")...)
	if code != 1 || !strings.Contains(errs, "INVALID_INPUT") {
		t.Errorf("bad kind: %d %q", code, errs)
	}
	if code, _, _ := run(t, append(admin, "agents", "show")...); code != 2 {
		t.Errorf("show without an id: exit %d, want 2", code)
	}
}
