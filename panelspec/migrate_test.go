package panelspec

import (
	"encoding/json"
	"testing"
)

func TestMigrateV0(t *testing.T) {
	t.Parallel()
	v0 := `{"v":0,"origin":"host",
		"root":{"type":"panel-body","props":{"title":"Docs"},"children":[
			{"type":"heading","props":{"text":"Links"}},
			{"id":"n1","type":"stack","children":[
				{"type":"link","props":{"url":"https://example.com","text":"Example"}},
				{"id":"keep","type":"link","props":{"href":"/a","label":"A"}}
			]}
		]},
		"actions":{},"state":{"x":1}}`
	spec, issues := Validate([]byte(v0), nil)
	if spec == nil || len(issues) > 0 {
		t.Fatalf("v0 spec refused:\n%s", dump(issues))
	}
	if spec.V != Version {
		t.Errorf("v = %d", spec.V)
	}
	// Explicit ids are kept; minted ones skip them ("n1" is taken).
	root := spec.Nodes[spec.Root]
	if root.Type != TypePanelBody || len(root.Children) != 2 || root.Children[1] != "n1" {
		t.Fatalf("root = %s %+v", spec.Root, root)
	}
	if spec.Root == "n1" || root.Children[0] == "n1" {
		t.Errorf("a minted id collides with the explicit id n1: root %s, children %v", spec.Root, root.Children)
	}
	stack := spec.Nodes["n1"]
	if len(stack.Children) != 2 || stack.Children[1] != "keep" {
		t.Fatalf("stack = %+v", stack)
	}
	// Link props are renamed.
	if got := spec.Nodes[stack.Children[0]].Props; !jsonEqual(got, `{"href":"https://example.com","label":"Example"}`) {
		t.Errorf("migrated link props = %s", got)
	}
	if !jsonEqual(spec.State, `{"x":1}`) {
		t.Errorf("state = %s", spec.State)
	}
	// The migrated spec is a valid version 1 spec on its own.
	raw, _ := json.Marshal(spec)
	if again, issues := Validate(raw, nil); again == nil || len(issues) > 0 {
		t.Fatalf("migrated spec does not revalidate:\n%s", dump(issues))
	}
}

func TestMigrateV0Issues(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{name: "duplicate explicit id", spec: `{"v":0,"origin":"host","root":{"id":"a","type":"stack","children":[{"id":"a","type":"stack"}]}}`,
			want: []want{e(cParse, "/root/children/0/id")}},
		{name: "child not an object", spec: `{"v":0,"origin":"host","root":{"type":"stack","children":["x"]}}`,
			want: []want{e(cParse, "/root/children/0")}},
		{name: "later checks point into the migrated spec", spec: `{"v":0,"origin":"host","root":{"id":"b","type":"stack","children":[{"id":"l","type":"link","props":{"url":"javascript:alert(1)","text":"x"}}]}}`,
			want: []want{e(cUnsafe, "/nodes/l/props/href")}},
		{name: "too deep after flattening", spec: func() string {
			s := `{"type":"stack"}`
			for range 12 {
				s = `{"type":"stack","children":[` + s + `]}`
			}
			return `{"v":0,"origin":"host","root":` + s + `}`
		}(), want: []want{e(cBudget, "/nodes/n13")}},
		{name: "prototype keys are found after migration", spec: `{"v":0,"origin":"host","root":{"type":"text","props":{"text":"x","__proto__":{}}}}`,
			want: []want{e(cUnsafe, "/nodes/n1/props/__proto__")}},
	})
}
