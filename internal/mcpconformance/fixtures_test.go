package mcpconformance_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/mcpconformance"
	"github.com/switchboardhq/switchboard/sqlite"
)

// The fixtures run through the registry and broker; a loopback client
// without a token (as the suite connects) is the daemon's user for its
// whole session.
func TestFixtures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, h, err := mcpconformance.New(ctx, daemon.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); d.Close() })
	if _, err := d.Registry.Get(ctx, "conformance.test_simple_text"); err != nil {
		t.Fatalf("fixture not in the catalog: %v", err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
		}})
	// The fixtures serve the conformance suite, which speaks 2025-11-25:
	// test_elicitation sends elicitation/create on the call's session, which
	// a 2026-07-28 request (the Go client's default) has not.
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	text := func(res *mcp.CallToolResult) string {
		t.Helper()
		tc, ok := res.Content[0].(*mcp.TextContent)
		if !ok {
			t.Fatalf("content %#v", res.Content)
		}
		return tc.Text
	}

	res := call("test_simple_text", nil)
	if res.IsError || text(res) != "This is a simple text response for testing." {
		t.Fatalf("%+v", res)
	}
	inv, err := d.Broker.Get(ctx, res.Meta["switchboard/invocationId"].(string))
	if err != nil || inv.Caller != "user:admin" || inv.Tool != "conformance.test_simple_text" {
		t.Fatalf("record %+v %v", inv, err)
	}

	res = call("test_multiple_content_types", nil)
	if len(res.Content) != 3 {
		t.Fatalf("content %+v", res.Content)
	}
	if img, ok := res.Content[1].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || len(img.Data) == 0 {
		t.Errorf("image block %#v", res.Content[1])
	}
	if r, ok := res.Content[2].(*mcp.EmbeddedResource); !ok || r.Resource.URI != "test://embedded-in-multiple" {
		t.Errorf("resource block %#v", res.Content[2])
	}

	res = call("test_elicitation", map[string]any{"message": "name?"})
	if res.IsError || text(res) != "Elicitation result: action=accept, content=map[username:ada]" {
		t.Fatalf("elicitation: %s", text(res))
	}

	res = call("test_error_handling", nil)
	if !res.IsError || text(res) != string(switchboard.CodeUpstreamError)+": the handler of conformance.test_error_handling failed: this tool intentionally returns an error for testing" {
		t.Fatalf("error fixture: %s", text(res))
	}
	if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "test://static-text"}); err != nil {
		t.Errorf("fixture resource: %v", err)
	}
	if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "test_simple_prompt"}); err != nil {
		t.Errorf("fixture prompt: %v", err)
	}
	// The catalog name is hidden behind the alias.
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "conformance-test_simple_text"}); err == nil {
		t.Error("aliased fixture answered to its mapped catalog name")
	}
}
