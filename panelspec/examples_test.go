package panelspec

import (
	"encoding/json"
	"testing"
)

// The curated examples panel.describe serves must stay valid and cover the
// three shapes agents ask for most: a form, a table and a composition.
func TestExamplesValidate(t *testing.T) {
	t.Parallel()
	examples := Examples()
	names := map[string]bool{}
	for _, ex := range examples {
		names[ex.Name] = true
		spec, issues := Validate(ex.Spec, nil)
		if spec == nil || len(issues) > 0 {
			t.Errorf("example %s:\n%s", ex.Name, dump(issues))
			continue
		}
		types := map[string]bool{}
		for _, n := range spec.Nodes {
			types[n.Type] = true
		}
		switch ex.Name {
		case "task-form":
			if !types[TypeFieldForm] {
				t.Errorf("task-form has no field-form")
			}
		case "task-table":
			if !types[TypeTable] {
				t.Errorf("task-table has no table")
			}
		case "dashboard":
			if spec.Origin != OriginAgent || !types[TypeTabs] || !types[TypeRow] {
				t.Errorf("dashboard is not an agent composition with tabs and rows")
			}
		}
	}
	for _, want := range []string{"task-form", "task-table", "dashboard"} {
		if !names[want] {
			t.Errorf("missing example %s", want)
		}
	}
	// Together the examples use every built-in type but the placeholder
	// and the preview (off by default: no example teaches runnable code),
	// so an agent reading them sees each one in use.
	used := map[string]bool{}
	for _, ex := range examples {
		var s Spec
		if err := json.Unmarshal(ex.Spec, &s); err != nil {
			t.Fatal(err)
		}
		for _, n := range s.Nodes {
			used[n.Type] = true
		}
	}
	for _, typ := range NewCatalog().Types() {
		if typ != TypePlaceholder && typ != TypePreview && !used[typ] {
			t.Errorf("no example uses %s", typ)
		}
	}
}
