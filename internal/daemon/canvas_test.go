package daemon_test

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/scope"
)

// Over HTTP: the host switches every surface with one PUT; a session
// minted with a narrowing stays guarded under it; a bad policy at the mint
// creates no session; agents cannot set the host's layer.
func TestHTTPCanvasLayers(t *testing.T) {
	t.Parallel()
	p := newPanelDaemon(t)
	canvas := func(tok, id string) map[string]any {
		t.Helper()
		code, body := p.do(t, tok, "GET", "/api/v1/sessions/"+id+"/canvas", "")
		if code != 200 {
			t.Fatalf("canvas of %s: %d %v", id, code, body)
		}
		return body
	}
	if c := canvas(p.tab.SessionToken, p.tab.SessionID); c["preset"] != "guarded" || c["open"] != false {
		t.Fatalf("default %v", c)
	}
	if code, body := p.do(t, mcpToken, "PUT", "/api/v1/canvas", `{"preset": "open"}`); code != 200 || body["effective"].(map[string]any)["preset"] != "open" {
		t.Fatalf("PUT: %d %v", code, body)
	}
	if c := canvas(p.tab.SessionToken, p.tab.SessionID); c["preset"] != "open" || c["open"] != true {
		t.Fatalf("after the host's switch %v", c)
	}
	agent := p.token(scope.TokenRequest{Agent: "planner"})
	if code, body := p.do(t, agent, "PUT", "/api/v1/canvas", `{"preset": "open"}`); code != 403 || panelErrCode(body) != "FORBIDDEN" {
		t.Fatalf("an agent sets the host's layer: %d %v", code, body)
	}
	if code, body := p.do(t, mcpToken, "PUT", "/api/v1/canvas", `{"preset": "yolo"}`); code != 400 || panelErrCode(body) != "INVALID_INPUT" {
		t.Fatalf("bad preset: %d %v", code, body)
	}

	code, body := p.do(t, mcpToken, "POST", "/api/v1/sessions", `{"principal": "user:9", "canvasPolicy": {"preset": "guarded"}}`)
	if code != 201 {
		t.Fatalf("mint: %d %v", code, body)
	}
	id := body["sessionId"].(string)
	if c := canvas(body["sessionToken"].(string), id); c["preset"] != "guarded" || c["hitlOnCompose"] != true {
		t.Fatalf("the narrowed session %v", c)
	}
	if code, body := p.do(t, mcpToken, "DELETE", "/api/v1/sessions/"+id, ""); code != 204 {
		t.Fatalf("close: %d %v", code, body)
	}
	// The narrowing is part of the stored session: closing it never
	// widens what its tab (or a late agent call) is held to.
	if l := p.d.Panels.CanvasLayers(id); l.Session.Preset != "guarded" || !l.Effective.HITLOnCompose {
		t.Fatalf("a closed session's narrowing was widened: %+v", l)
	}
	if code, body := p.do(t, mcpToken, "POST", "/api/v1/sessions", `{"canvasPolicy": {"preset": "wide"}}`); code != 400 || panelErrCode(body) != "INVALID_INPUT" {
		t.Fatalf("bad narrowing: %d %v", code, body)
	}
}
