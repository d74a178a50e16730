package mcpserver

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
)

// The fixtures run through the registry and broker; an unauthenticated
// loopback client is the conformance principal for its whole session.
func TestConformanceFixtures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{ConformanceFixtures: true})
	if _, err := e.reg.Get(e.ctx, "conformance.test_simple_text"); err != nil {
		t.Fatalf("fixture not in the catalog: %v", err)
	}
	cs := e.connect("", &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
	}})

	res := call(t, cs, "test_simple_text", nil)
	if res.IsError || text(t, res) != "This is a simple text response for testing." {
		t.Fatalf("%+v", res)
	}
	inv, err := e.br.Get(e.ctx, res.Meta[metaInvocationID].(string))
	if err != nil || inv.Caller != conformancePrincipal.String() || inv.Tool != "conformance.test_simple_text" {
		t.Fatalf("record %+v %v", inv, err)
	}

	res = call(t, cs, "test_multiple_content_types", nil)
	if len(res.Content) != 3 {
		t.Fatalf("content %+v", res.Content)
	}
	if img, ok := res.Content[1].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || len(img.Data) == 0 {
		t.Errorf("image block %#v", res.Content[1])
	}
	if r, ok := res.Content[2].(*mcp.EmbeddedResource); !ok || r.Resource.URI != "test://embedded-in-multiple" {
		t.Errorf("resource block %#v", res.Content[2])
	}

	res = call(t, cs, "test_elicitation", map[string]any{"message": "name?"})
	if res.IsError || text(t, res) != "Elicitation result: action=accept, content=map[username:ada]" {
		t.Fatalf("elicitation: %s", text(t, res))
	}

	res = call(t, cs, "test_error_handling", nil)
	if !res.IsError || text(t, res) != string(switchboard.CodeUpstreamError)+": the handler of conformance.test_error_handling failed: this tool intentionally returns an error for testing" {
		t.Fatalf("error fixture: %s", text(t, res))
	}
	// Outside fixture mode the same request without a token is refused
	// (see TestHTTPGuards); in it, the catalog name is hidden behind the
	// alias.
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "conformance-test_simple_text"}); err == nil {
		t.Error("aliased fixture answered to its mapped catalog name")
	}
}
