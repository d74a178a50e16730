package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/sqlite"
)

const chatSpec = `{"v": 1, "root": "body", "sources": {"note": {"kind": "state", "path": "/note"}}, "state": {"note": {"title": "Draft"}},
 "nodes": {"body": {"type": "panel-body", "props": {"title": "Note"}, "children": ["form"]},
  "form": {"type": "field-form", "props": {"bind": "note", "submit": "keep", "fields": [{"path": "title", "label": "Title", "kind": "text"}]}}},
 "actions": {"keep": {"kind": "mutate", "source": "note", "op": "update"}}}`

// On a plain daemon with no tab open, an MCP client that declared MCP
// Apps (per session, or per request on 2026-07-28) is offered the panel
// tools and gets its panels in its own chat surface; a client that
// declared nothing is offered none. The surface is its principal's: the
// same agent for the same user finds its panel again from a new MCP
// session, and another user's client reads it as not found.
func TestMCPAppsPanelsWithoutATab(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// The open canvas policy lets the compose show without a person's
	// approval; e2e/mcpapps_test.go goes through the guarded default.
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpToken, Canvas: panel.CanvasPolicy{Preset: "open"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	mint := func(user string) string {
		tok, err := d.Tokens.Create(ctx, scope.TokenRequest{Agent: "chat-host", User: user})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}
	alice, bob := mint("user:alice"), mint("user:bob")
	connect := func(tok string, apps bool, version string) *mcp.ClientSession {
		t.Helper()
		caps := &mcp.ClientCapabilities{}
		if apps {
			caps.AddExtension(mcpserver.AppsExtension, map[string]any{"mimeTypes": []string{mcpserver.AppMIMEType}})
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "chat", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok}}},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	const sessions, stateless = "2025-11-25", "2026-07-28"
	listed := func(cs *mcp.ClientSession) map[string]bool {
		t.Helper()
		names := map[string]bool{}
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			names[tl.Name] = true
		}
		return names
	}
	served := []string{"panel-compose", "panel-patch", "panel-close", "panel-describe", "panel-list",
		"panel-read_state", "panel-fill", "panel-run_action", "document-export"}
	call := func(cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res, text(res)
	}

	appsA := connect(alice, true, sessions)
	for _, c := range []struct {
		what    string
		cs      *mcp.ClientSession
		offered bool
	}{
		{"an MCP Apps client (initialize)", appsA, true},
		{"an MCP Apps client (2026-07-28, per request)", connect(alice, true, stateless), true},
		{"a plain client", connect(alice, false, sessions), false},
		{"a plain 2026-07-28 client", connect(alice, false, stateless), false},
	} {
		got := listed(c.cs)
		for _, n := range served {
			if got[n] != c.offered {
				t.Fatalf("%s: %s listed %v, want %v (lists %v)", c.what, n, got[n], c.offered, got)
			}
		}
		if got["panel-open"] {
			t.Fatalf("%s: panel.open is offered without a host panel", c.what)
		}
	}
	if _, err := connect(alice, false, sessions).CallTool(ctx, &mcp.CallToolParams{Name: "panel-compose", Arguments: map[string]any{"spec": json.RawMessage(chatSpec)}}); err == nil {
		t.Fatal("a plain client with no tab composed a panel")
	}

	// Alice's chat composes with no tab: the panel is in her chat surface.
	res, out := call(appsA, "panel-compose", map[string]any{"spec": json.RawMessage(chatSpec)})
	var sn struct{ InstanceID, SessionID string }
	if err := json.Unmarshal([]byte(out), &sn); res.IsError || err != nil || sn.InstanceID == "" {
		t.Fatalf("compose: %s", out)
	}
	if !strings.HasPrefix(sn.SessionID, "chat_") {
		t.Fatalf("the panel is in %q, want a chat surface", sn.SessionID)
	}
	if m, _ := res.Meta["ui"].(map[string]any); m["resourceUri"] != "ui://switchboard/panels/"+sn.InstanceID {
		t.Fatalf("compose _meta: %v", res.Meta)
	}
	if res, out := call(appsA, "panel-fill", map[string]any{"instanceId": sn.InstanceID, "values": map[string]any{"title": "Kept"}}); res.IsError {
		t.Fatalf("fill: %s", out)
	}

	t.Run("the same agent for the same user finds it from a new MCP session", func(t *testing.T) {
		for _, cs := range []*mcp.ClientSession{connect(alice, true, sessions), connect(alice, true, stateless)} {
			res, out := call(cs, "panel-read_state", map[string]any{"instanceId": sn.InstanceID})
			var st struct{ Values map[string]map[string]any }
			if err := json.Unmarshal([]byte(out), &st); res.IsError || err != nil || st.Values["note"]["title"] != "Kept" {
				t.Fatalf("read_state: %s", out)
			}
			if _, out := call(cs, "panel-list", map[string]any{}); !strings.Contains(out, sn.InstanceID) {
				t.Fatalf("panel.list: %s", out)
			}
			read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://switchboard/panels/" + sn.InstanceID})
			if err != nil || read.Contents[0].MIMEType != mcpserver.AppMIMEType {
				t.Fatalf("read the view: %v", err)
			}
		}
		if res, out := call(appsA, "panel-run_action", map[string]any{"instanceId": sn.InstanceID, "action": "keep"}); res.IsError || !strings.Contains(out, `"ok"`) {
			t.Fatalf("run_action: %s", out)
		}
	})

	t.Run("another user's client reads it as not found", func(t *testing.T) {
		appsB := connect(bob, true, sessions)
		if res, out := call(appsB, "panel-read_state", map[string]any{"instanceId": sn.InstanceID}); !res.IsError || !strings.HasPrefix(out, "NOT_FOUND") {
			t.Fatalf("bob's read_state: %s", out)
		}
		if res, out := call(appsB, "panel-fill", map[string]any{"instanceId": sn.InstanceID, "values": map[string]any{"title": "Bob's"}}); !res.IsError || !strings.HasPrefix(out, "NOT_FOUND") {
			t.Fatalf("bob's fill: %s", out)
		}
		if _, out := call(appsB, "panel-list", map[string]any{}); strings.Contains(out, sn.InstanceID) {
			t.Fatalf("bob's panel.list shows alice's panel: %s", out)
		}
		if _, out := call(appsB, "panel-list", map[string]any{"sessionId": sn.SessionID}); strings.Contains(out, sn.InstanceID) {
			t.Fatalf("bob's panel.list of alice's surface: %s", out)
		}
		_, err := appsB.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://switchboard/panels/" + sn.InstanceID})
		var re *jsonrpc.Error
		if !errors.As(err, &re) || re.Code != mcp.CodeResourceNotFound {
			t.Fatalf("bob reads alice's view: %v", err)
		}
		list, err := appsB.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.Resources {
			if strings.Contains(r.URI, sn.InstanceID) {
				t.Fatal("alice's panel is listed to bob")
			}
		}
		// Naming her surface is naming a tab that is not there.
		if res, out := call(appsB, "panel-compose", map[string]any{"spec": json.RawMessage(chatSpec), "sessionId": sn.SessionID}); !res.IsError || !strings.HasPrefix(out, "SESSION_GONE") {
			t.Fatalf("bob composes into alice's surface: %s", out)
		}
		// His own compose goes to his own surface.
		_, out := call(appsB, "panel-compose", map[string]any{"spec": json.RawMessage(chatSpec)})
		var his struct{ SessionID string }
		if err := json.Unmarshal([]byte(out), &his); err != nil || !strings.HasPrefix(his.SessionID, "chat_") || his.SessionID == sn.SessionID {
			t.Fatalf("bob's compose: %s", out)
		}
	})

	// The HTTP listing is no MCP Apps client: the rule for it is unchanged.
	p := &panelDaemon{d: d, srv: srv}
	if code, body := p.call(t, alice, panel.ToolCompose, map[string]any{"spec": map[string]any{}}); code != 404 || panelErrCode(body) != "TOOL_NOT_FOUND" {
		t.Fatalf("compose over HTTP with no tab: %d %v", code, body)
	}
}
