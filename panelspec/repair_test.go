package panelspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

var brokenSpec = mk(`"h":{"type":"heading","props":{"text":"x","lvl":2}},
	"l":{"type":"link","props":{"href":"java\tscript:alert(1)","label":"x"}},
	"c":{"type":"chrt","props":{}},
	"b1":{"type":"button","props":{"label":"Save","action":"sav"}}`,
	`"actions":{"save":{"kind":"refresh","source":"s"}}`, `"sources":{"s":{"kind":"state"}}`)

func TestRepairHint(t *testing.T) {
	t.Parallel()
	_, issues := Validate([]byte(brokenSpec), nil)
	hint := RepairHint(issues)
	for _, want := range []string{
		"rejected with 3 error(s)",
		`SPEC_PROPS /nodes/h/props/lvl (node h): unknown prop "lvl" for heading — did you mean "level"?`,
		`SPEC_ACTION /nodes/b1/props/action (node b1): action "sav" is not declared — did you mean "save"?`,
		`SPEC_UNSAFE /nodes/l/props/href (node l)`,
		`SPEC_UNKNOWN_TYPE /nodes/c/type (node c) [warning]`,
	} {
		if !strings.Contains(hint, want) {
			t.Errorf("hint lacks %q:\n%s", want, hint)
		}
	}
	// Errors come before warnings.
	if strings.Index(hint, "[warning]") < strings.Index(hint, "SPEC_UNSAFE") {
		t.Errorf("warning listed before an error:\n%s", hint)
	}
	if RepairHint(nil) != "" {
		t.Error("hint for no issues")
	}
	// Bounded, however many issues there are.
	many := make([]Issue, 500)
	for i := range many {
		many[i] = Issue{Code: cProps, Severity: SeverityError, Pointer: "/nodes/x", Message: strings.Repeat("m", 1000)}
	}
	if h := RepairHint(many); len(h) > 12_000 || !strings.Contains(h, "and 470 more") {
		t.Errorf("hint for 500 issues is %d bytes:\n%.500s", len(h), h)
	}
}

func TestFallbackCard(t *testing.T) {
	t.Parallel()
	_, issues := Validate([]byte(brokenSpec), nil)
	hostile := append(issues,
		Issue{Code: cUnsafe, Severity: SeverityError, Pointer: "/nodes/x/props/<script>alert(1)</script>", Message: "<img src=x onerror=alert(1)>"},
		Issue{Code: cUnsafe, Severity: SeverityError, Pointer: "/" + strings.Repeat("p", 20000)},
		Issue{Code: cUnsafe, Severity: SeverityError, Pointer: "/a\x00b"},
		Issue{Code: cUnsafe, Severity: SeverityError},
	)
	for _, tc := range []struct {
		title  string
		issues []Issue
	}{
		{"Tasks", issues},
		{"<svg onload=alert(1)>", hostile},
		{strings.Repeat("t", 10000), nil},
		{"", []Issue{{Code: cParse, Severity: SeverityError, Message: "x"}}},
	} {
		card := FallbackCard(tc.title, tc.issues)
		if card == nil || card.Origin != OriginAgent {
			t.Fatalf("no card for %q", tc.title)
		}
		raw, _ := json.Marshal(card)
		if s, issues := Validate(raw, nil); s == nil || len(issues) > 0 {
			t.Fatalf("fallback card for %.40q does not validate:\n%s\n%s", tc.title, dump(issues), raw)
		}
		if strings.Contains(string(raw), "<") {
			t.Errorf("card carries markup: %s", raw)
		}
	}
}

func TestFormatIssues(t *testing.T) {
	t.Parallel()
	_, issues := Validate([]byte(brokenSpec+``), nil)
	issues = append([]Issue{{Code: cBudget, Severity: SeverityError, Pointer: "/nodes", Message: "201 nodes, over the budget of 200", Suggestion: "split the panel"}}, issues...)
	var b bytes.Buffer
	if err := FormatIssues(&b, issues); err != nil {
		t.Fatal(err)
	}
	want := `spec
  error   SPEC_BUDGET       /nodes
          201 nodes, over the budget of 200
          split the panel

node "c"
  warning SPEC_UNKNOWN_TYPE /nodes/c/type
          unknown node type "chrt"; kept as a placeholder
          did you mean "chart"?

node "h"
  error   SPEC_PROPS        /nodes/h/props/lvl
          unknown prop "lvl" for heading
          did you mean "level"?

node "b1"
  error   SPEC_ACTION       /nodes/b1/props/action
          action "sav" is not declared
          did you mean "save"?

node "l"
  error   SPEC_UNSAFE       /nodes/l/props/href
          URL scheme "javascript:" is not allowed; use http, https, mailto or a relative URL
          use an https:// URL, a relative URL or mailto:

4 errors, 1 warning
`
	if b.String() != want {
		t.Errorf("FormatIssues:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := FormatIssues(&b, nil); err != nil || b.String() != "spec is valid\n" {
		t.Errorf("no issues: %q", b.String())
	}
}

func TestIssuesError(t *testing.T) {
	t.Parallel()
	_, issues := Validate([]byte(brokenSpec), nil)
	err := IssuesError(issues)
	if err == nil || err.Code != cProps || !strings.Contains(err.Message, "(and 2 more)") {
		t.Fatalf("err = %v", err)
	}
	if IssuesError([]Issue{{Code: cUnknown, Severity: SeverityWarning}}) != nil {
		t.Fatal("warnings only is not an error")
	}
	if got := switchboard.CodeOf(fmt.Errorf("wrap: %w", err)); got != cProps {
		t.Fatalf("code through wrapping = %s", got)
	}
}
