package panelspec

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

func agentSpec(t testing.TB) *Spec {
	t.Helper()
	raw := mk(`"h":{"type":"heading","props":{"text":"Hello","level":2}},"l":{"type":"link","props":{"href":"/a","label":"A"}}`)
	spec, issues := Validate([]byte(raw), nil)
	if spec == nil {
		t.Fatalf("base spec:\n%s", dump(issues))
	}
	return spec
}

func snapshot(t testing.TB, s *Spec) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPatchApplies(t *testing.T) {
	t.Parallel()
	base := agentSpec(t)
	before := snapshot(t, base)
	got, issues := Patch(base, []byte(`[
		{"op":"replace","path":"/nodes/h/props/text","value":"Hi there"},
		{"op":"add","path":"/nodes/t","value":{"type":"text","props":{"text":"New"}}},
		{"op":"add","path":"/nodes/body/children/-","value":"t"}
	]`), nil)
	if len(issues) > 0 {
		t.Fatalf("issues:\n%s", dump(issues))
	}
	if !jsonEqual(got.Nodes["h"].Props, `{"text":"Hi there","level":2}`) || got.Nodes["t"].Type != TypeText {
		t.Fatalf("patched spec: %s", snapshot(t, got))
	}
	if fmt.Sprint(got.Nodes["body"].Children) != "[h l t]" {
		t.Fatalf("children = %v", got.Nodes["body"].Children)
	}
	if snapshot(t, base) != before {
		t.Fatal("Patch modified its input")
	}
}

func TestPatchWarningsOnly(t *testing.T) {
	t.Parallel()
	got, issues := Patch(agentSpec(t), []byte(`[{"op":"add","path":"/nodes/orphan","value":{"type":"text","props":{"text":"x"}}}]`), nil)
	if len(issues) != 1 || issues[0].Severity != SeverityWarning || got.Nodes["orphan"].Type == "" {
		t.Fatalf("got %v:\n%s", got != nil, dump(issues))
	}
}

func TestPatchAtomic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, patch string
		code        switchboard.Code
	}{
		{"unsafe result", `[{"op":"replace","path":"/nodes/l/props/href","value":"java\tscript:alert(1)"}]`, cUnsafe},
		{"good op then bad op", `[{"op":"replace","path":"/nodes/h/props/text","value":"ok"},{"op":"add","path":"/nodes/h/props/style","value":"x"}]`, cUnsafe},
		{"dangling child", `[{"op":"add","path":"/nodes/body/children/-","value":"ghost"}]`, cBudget},
		{"props schema", `[{"op":"replace","path":"/nodes/h/props/level","value":9}]`, cProps},
		{"origin", `[{"op":"replace","path":"/origin","value":"host"}]`, cUnsafe},
		{"version", `[{"op":"replace","path":"/v","value":0}]`, cUnsafe},
		{"whole spec", `[{"op":"replace","path":"","value":{}}]`, cUnsafe},
		{"move the origin away", `[{"op":"move","from":"/origin","path":"/state"}]`, cUnsafe},
		{"not json", `[{"op":`, cParse},
		{"not an array", `{"op":"remove","path":"/nodes/h"}`, cParse},
		{"duplicate key in an op", `[{"op":"remove","op":"add","path":"/nodes/x","value":1}]`, cParse},
		{"lone surrogate in a value", `[{"op":"replace","path":"/nodes/h/props/text","value":"\ud800"}]`, cParse},
		{"missing path", `[{"op":"remove","path":"/nodes/nope"}]`, cParse},
		{"unknown op", `[{"op":"frobnicate","path":"/nodes/h"}]`, cParse},
		{"failed test", `[{"op":"test","path":"/nodes/h/props/text","value":"Bye"},{"op":"remove","path":"/nodes/l"}]`, cParse},
		{"too many ops", "[" + strings.Repeat(`{"op":"test","path":"/v","value":1},`, maxPatchOps) + `{"op":"test","path":"/v","value":1}]`, cBudget},
		{"too deep", "[" + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "]", cBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := agentSpec(t)
			before := snapshot(t, base)
			got, issues := Patch(base, []byte(tc.patch), nil)
			if got != base {
				t.Fatalf("a failed patch must return the original spec")
			}
			if snapshot(t, got) != before {
				t.Fatal("the original spec changed")
			}
			if !HasErrors(issues) || issues[0].Code != tc.code {
				t.Fatalf("want %s first, got:\n%s", tc.code, dump(issues))
			}
		})
	}
}

// A patch of copy operations that doubles the document each time must stop
// at the byte limit instead of allocating gigabytes.
func TestPatchCopyBomb(t *testing.T) {
	t.Parallel()
	ops := []string{`{"op":"add","path":"/state","value":{"a":"` + strings.Repeat("x", 1000) + `"}}`}
	for i := range 40 {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/state","path":"/state/c%d"}`, i))
	}
	base := agentSpec(t)
	got, issues := Patch(base, []byte("["+strings.Join(ops, ",")+"]"), nil)
	if got != base || !HasErrors(issues) {
		t.Fatalf("copy bomb applied:\n%s", dump(issues))
	}
}

func TestPatchKeepsOptions(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	if err := c.Register("acme.chart", json.RawMessage(chartSchema)); err != nil {
		t.Fatal(err)
	}
	opts := &Options{Catalog: c}
	base, issues := Validate([]byte(mk(`"c":{"type":"acme.chart","props":{"series":[1]}}`)), opts)
	if base == nil {
		t.Fatal(dump(issues))
	}
	got, issues := Patch(base, []byte(`[{"op":"add","path":"/nodes/c/props/series/-","value":2}]`), opts)
	if len(issues) > 0 || !jsonEqual(got.Nodes["c"].Props, `{"series":[1,2]}`) {
		t.Fatalf("custom catalog patch:\n%s", dump(issues))
	}
	if diff := cmp.Diff(base.Origin, got.Origin); diff != "" {
		t.Fatal(diff)
	}
}
