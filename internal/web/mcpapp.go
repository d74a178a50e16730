package web

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// MCP Apps view. An MCP Apps host (Claude, VS Code, Goose, ChatGPT, …)
// shows a server's UI as one HTML document in a sandboxed iframe whose
// Content-Security-Policy allows no network origin the server did not
// declare; switchboard declares none, so the view must carry its code
// inline. ViewScript is the SDK's own panel renderer (panels.js with
// charts.js and document.js) and the view's host bridge (mcpapp.js), joined
// into one classic script: the same renderer as the tab, not a copy.

// viewModules are joined in dependency order.
var viewModules = []string{"charts", "document", "panels", "mcpapp"}

var (
	importLine = regexp.MustCompile(`(?m)^import \{([^}]*)\} from "\./([a-z]+)\.js";$`)
	exportDecl = regexp.MustCompile(`(?m)^export ((?:async )?function\*? |const |let |class )([A-Za-z_$][\w$]*)`)
	// anyModuleSyntax catches what the join does not understand (export
	// lists, default exports, dynamic or bare imports): the view would break.
	anyModuleSyntax = regexp.MustCompile(`(?m)^\s*(import|export)\b`)
)

var viewOnce = sync.OnceValues(func() (string, error) {
	var b strings.Builder
	b.WriteString("\"use strict\";\n")
	exports := map[string]bool{}
	for _, m := range viewModules {
		src, err := files.ReadFile("sdk/" + m + ".js")
		if err != nil {
			return "", err
		}
		body, names, err := joinModule(string(src), exports)
		if err != nil {
			return "", fmt.Errorf("%s.js: %w", m, err)
		}
		// Each module keeps its own scope; only its exports leave it.
		fmt.Fprintf(&b, "const __sb_%s = (() => {\n%s\nreturn { %s };\n})();\n", m, body, strings.Join(names, ", "))
		exports[m] = true
	}
	out := b.String()
	// The script is inlined in an HTML document: an end tag or a comment
	// opener in it would end the script early.
	if lower := strings.ToLower(out); strings.Contains(lower, "</script") || strings.Contains(lower, "<!--") {
		return "", fmt.Errorf("the view script holds </script or <!--, which would end it inside HTML")
	}
	return out, nil
})

// joinModule rewrites one module for the joined script: its imports of
// modules joined before it read their export objects, and its export
// keywords go (the names are returned).
func joinModule(src string, joined map[string]bool) (string, []string, error) {
	var err error
	src = importLine.ReplaceAllStringFunc(src, func(line string) string {
		m := importLine.FindStringSubmatch(line)
		if !joined[m[2]] {
			err = fmt.Errorf("imports %s.js, which is not joined before it", m[2])
		}
		return "const {" + m[1] + "} = __sb_" + m[2] + ";"
	})
	if err != nil {
		return "", nil, err
	}
	var names []string
	for _, m := range exportDecl.FindAllStringSubmatch(src, -1) {
		names = append(names, m[2])
	}
	src = exportDecl.ReplaceAllString(src, "$1$2")
	if loc := anyModuleSyntax.FindStringIndex(src); loc != nil {
		line := src[loc[0]:]
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		return "", nil, fmt.Errorf("module syntax the view cannot join: %q", strings.TrimSpace(line))
	}
	return src, names, nil
}

// ViewScript returns the MCP Apps view's script: the panel renderer and
// the bridge to the host, as one classic script with no imports. It
// starts the view when it runs (mcpapp.js describes the protocol).
func ViewScript() (string, error) { return viewOnce() }
