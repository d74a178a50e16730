// Package panelspec provides the Panel Spec IR: the one JSON format in which
// hosts and agents describe UI surfaces, the catalog of node types with
// the JSON Schema of each type's props, the validation pipeline every spec
// passes before anything renders it, RFC 6902 patching of specs, and a
// typed Go builder that compiles to the IR.
//
// A spec is a flat map of nodes under a root, plus the data sources the
// nodes bind to and the actions they may run:
//
//	{"v": 1, "origin": "agent", "root": "body",
//	 "sources": {"task": {"kind": "state", "path": "/task"}},
//	 "state":   {"task": {"title": ""}},
//	 "nodes":   {"body":  {"type": "panel-body", "props": {"title": "New task"}, "children": ["form"]},
//	             "form":  {"type": "field-form", "props": {"bind": "task", "submit": "save",
//	                        "fields": [{"path": "title", "label": "Title", "kind": "text"}]}}},
//	 "actions": {"save": {"kind": "mutate", "source": "task", "op": "create"}}}
//
// Validate runs the stages in a fixed order (parse and migrate, catalog
// membership, props, action resolution, budgets, sanitization) and returns
// every issue at once, each with a frozen SPEC_* code, the node id, a JSON
// pointer and the nearest valid alternative. Agents get one repair round
// (RepairHint), then a FallbackCard. The panel tools, data adapters and the
// browser renderer build on this package; it has no I/O of its own.
// docs/panels.md explains the design decisions.
package panelspec
