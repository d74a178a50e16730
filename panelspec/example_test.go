package panelspec_test

import (
	"fmt"
	"os"

	"github.com/switchboardhq/switchboard/panelspec"
)

func ExampleBuilder() {
	b := panelspec.NewBuilder(panelspec.OriginHost)
	b.Body(
		b.Heading("Tasks", 2),
		b.FormSubmit("task", "save", panelspec.TextField("title", "Title").Required()),
		b.Button("Save", "save"),
	)
	b.Source("task", panelspec.StateSource("/task"))
	b.Action("save", panelspec.Mutate("task", panelspec.OpUpdate))
	spec, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(spec.Root, spec.Nodes[spec.Root].Children)
	// Output: body1 [heading1 form1 button1]
}

func ExampleValidate() {
	raw := []byte(`{"v": 1, "origin": "agent", "root": "body", "nodes": {
		"body": {"type": "panel-body", "children": ["title", "docs"]},
		"title": {"type": "heading", "props": {"text": "Hello", "lvl": 2}},
		"docs": {"type": "link", "props": {"href": "java\tscript:alert(1)", "label": "Docs"}}}}`)
	spec, issues := panelspec.Validate(raw, nil)
	fmt.Println("accepted:", spec != nil)
	panelspec.FormatIssues(os.Stdout, issues)
	// Output:
	// accepted: false
	// node "title"
	//   error   SPEC_PROPS        /nodes/title/props/lvl
	//           unknown prop "lvl" for heading
	//           did you mean "level"?
	//
	// node "docs"
	//   error   SPEC_UNSAFE       /nodes/docs/props/href
	//           URL scheme "javascript:" is not allowed; use http, https, mailto or a relative URL
	//           use an https:// URL, a relative URL or mailto:
	//
	// 2 errors, 0 warnings
}
