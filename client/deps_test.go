package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the typed client light: a program that talks to the
// daemon over HTTP must not compile in the call path, the catalog, the agent
// runtime or a model SDK. The wire records it decodes live in the root
// package (and the AG-UI event types in agui) for that reason.
func TestDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool on PATH: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const module = "github.com/switchboardhq/switchboard"
	forbidden := []string{
		module + "/broker",
		module + "/registry",
		module + "/agent",
		module + "/model",
		"github.com/openai/",
		"github.com/anthropics/",
	}
	var deps int
	seen := map[string]bool{} // one report per rule
	report := func(rule, msg string) {
		if !seen[rule] {
			seen[rule] = true
			t.Error(msg)
		}
	}
	for dep := range strings.FieldsSeq(string(out)) {
		deps++
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, strings.TrimSuffix(f, "/")+"/") {
				report(f, "client depends on "+dep+" (forbidden: "+f+")")
			}
		}
		if dep != module && !strings.HasPrefix(dep, module+"/") {
			report("third-party", "client depends on "+dep+", outside the standard library and switchboard")
		}
	}
	if deps == 0 {
		t.Fatal("go list -deps printed no packages; the listing is broken")
	}
}
