package web_test

import (
	"io"
	"regexp"
	"testing"

	"github.com/switchboardhq/switchboard/internal/web"
)

// The renderer and the chat element show text from models, tools and
// agent-composed panels: they must never hand a string to an HTML parser
// or to eval. (Comments may name the APIs; code may not use them.)
var sinks = regexp.MustCompile(`\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(|createContextualFragment|setHTMLUnsafe|DOMParser`)

func TestSDKHasNoHTMLSinks(t *testing.T) {
	t.Parallel()
	h := web.SDK()
	for _, path := range []string{"/sdk/switchboard.js", "/sdk/panels.js", "/sdk/charts.js", "/sdk/document.js", "/sdk/chat.js", "/sdk/panels.d.ts", "/sdk/chat.d.ts", "/sdk/context.js", "/sdk/context.d.ts", "/sdk/tasks.js", "/sdk/tasks.d.ts", "/sdk/webmcp.js", "/sdk/modelcontext.js", "/sdk/vendor/webmcp-polyfill/index.js", "/sdk/vendor/webmcp-polyfill/schema.js", "/sdk/mcpapp.js"} {
		resp := get(t, h, "GET", path)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || len(body) < 500 {
			t.Fatalf("%s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
		if m := sinks.Find(body); m != nil {
			t.Errorf("%s uses %s", path, m)
		}
	}
}

// The MCP Apps view is one inline script: every module joined, nothing
// imported or exported, and nothing that would end the script early.
func TestViewScriptJoinsTheRenderer(t *testing.T) {
	t.Parallel()
	js, err := web.ViewScript()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"const __sb_charts = ", "const __sb_panels = ", "const { renderPanel } = __sb_panels;", "function renderPanel(", "function start()"} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(js) {
			t.Errorf("the view script lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`(?m)^\s*(import|export)\b`).FindString(js); m != "" {
		t.Errorf("module syntax left: %q", m)
	}
	if m := sinks.FindString(js); m != "" {
		t.Errorf("the view script uses %s", m)
	}
}
