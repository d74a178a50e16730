package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestMCPHelperProcess is `switchboard` itself when re-executed by
// TestMCPStdio: it runs the CLI with the arguments in the environment.
func TestMCPHelperProcess(t *testing.T) {
	if os.Getenv("SWITCHBOARD_MCP_HELPER") != "1" {
		t.Skip("runs only as the child of TestMCPStdio")
	}
	os.Exit(Run(context.Background(), strings.Fields(os.Getenv("SWITCHBOARD_MCP_ARGS")), os.Stdin, os.Stdout, os.Stderr))
}

// An MCP client starts `switchboard mcp` as a command, the way Claude Code
// or Cursor do, and reaches the daemon's catalog through it.
func TestMCPStdio(t *testing.T) {
	url := startDaemon(t)
	admin := client.New(url, testToken, nil)
	if _, err := admin.RegisterTools(t.Context(), "", []switchboard.Tool{{
		Name: "tasks.list", Description: "List the tasks of a project.", Class: switchboard.ClassRead,
		Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "GET", URL: "http://127.0.0.1:1/tasks"}},
	}}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMCPHelperProcess$")
	cmd.Env = append(os.Environ(), "SWITCHBOARD_MCP_HELPER=1", "SWITCHBOARD_MCP_ARGS=--addr "+url+" --token "+testToken+" mcp")
	cmd.Stderr = os.Stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "exec-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	// The host's tool beside the daemon's own read tools (activity.get, …).
	if !slices.Contains(names, "tasks-list") || slices.Contains(names, "tasks.list") {
		b, _ := json.Marshal(res.Tools)
		t.Fatalf("tools over stdio: %s", b)
	}
	// The backend is not there: the call fails, as a tool error with its code.
	out, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tasks-list"})
	if err != nil || !out.IsError || !strings.HasPrefix(out.Content[0].(*mcp.TextContent).Text, "UPSTREAM_ERROR: ") {
		t.Fatalf("call over stdio: %v %+v", err, out)
	}
}

func TestMCPWithoutDaemon(t *testing.T) {
	code, _, errs := run(t, "--addr", "127.0.0.1:1", "--token", "x", "mcp")
	if code != 1 || !strings.Contains(errs, "UNAVAILABLE") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}
