package panelspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/switchboardhq/switchboard"
)

// Builder composes a spec in Go and compiles it to the IR. Node methods
// return the new node's id, so a tree reads inside out:
//
//	b := panel.NewBuilder(panel.OriginHost)
//	b.Body(
//		b.Heading("Tasks", 2),
//		b.FormSubmit("task", "save", panel.TextField("title", "Title").Required()),
//	)
//	b.Source("task", panel.StateSource("/task"))
//	b.Action("save", panel.Mutate("task", panel.OpUpdate))
//	spec, err := b.Build()
//
// Ids are minted from the type ("heading1", "form1"); AddID names a node
// explicitly. Build runs the output through Validate, so a built spec
// passes exactly the checks an agent's spec does.
type Builder struct {
	origin  string
	root    string
	nodes   map[string]Node
	sources map[string]Source
	actions map[string]Action
	state   map[string]any
	counts  map[string]int
	errs    []error
}

// NewBuilder starts an empty spec with the given origin (OriginHost or
// OriginAgent).
func NewBuilder(origin string) *Builder {
	return &Builder{
		origin: origin, nodes: map[string]Node{}, sources: map[string]Source{},
		actions: map[string]Action{}, state: map[string]any{}, counts: map[string]int{},
	}
}

var idPrefix = map[string]string{
	TypePanelBody: "body", TypeFieldForm: "form", TypeColumn: "col",
}

// Add adds a node of a built-in type, minting its id.
func (b *Builder) Add(p Props, children ...string) string {
	typ := p.NodeType()
	prefix := idPrefix[typ]
	if prefix == "" {
		prefix = typ
	}
	var id string
	for {
		b.counts[prefix]++
		id = prefix + strconv.Itoa(b.counts[prefix])
		if _, taken := b.nodes[id]; !taken {
			break
		}
	}
	return b.AddID(id, p, children...)
}

// AddID adds a node of a built-in type under an explicit id.
func (b *Builder) AddID(id string, p Props, children ...string) string {
	return b.Custom(id, p.NodeType(), p, children...)
}

// Custom adds a node of any type (a host-registered one, say) with props
// that encode to a JSON object.
func (b *Builder) Custom(id, typ string, props any, children ...string) string {
	if _, dup := b.nodes[id]; dup {
		b.errs = append(b.errs, fmt.Errorf("duplicate node id %q", id))
		return id
	}
	raw, err := json.Marshal(props)
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("node %q props: %w", id, err))
	}
	b.nodes[id] = Node{Type: typ, Props: raw, Children: append([]string(nil), children...)}
	return id
}

// Root makes id the root node.
func (b *Builder) Root(id string) *Builder {
	b.root = id
	return b
}

// Body adds an untitled panel-body and makes it the root.
func (b *Builder) Body(children ...string) string {
	return b.BodyWith(BodyProps{}, children...)
}

// BodyWith adds a panel-body with props and makes it the root.
func (b *Builder) BodyWith(p BodyProps, children ...string) string {
	id := b.Add(p, children...)
	b.root = id
	return id
}

// Stack adds a vertical stack.
func (b *Builder) Stack(children ...string) string { return b.Add(StackProps{}, children...) }

// Row adds a row.
func (b *Builder) Row(children ...string) string { return b.Add(RowProps{}, children...) }

// Column adds a column of the given width ("" for auto).
func (b *Builder) Column(width string, children ...string) string {
	return b.Add(ColumnProps{Width: width}, children...)
}

// Heading adds a heading of level 1 to 6.
func (b *Builder) Heading(text string, level int) string {
	return b.Add(HeadingProps{Text: text, Level: level})
}

// Text adds a paragraph.
func (b *Builder) Text(text string) string { return b.Add(TextProps{Text: text}) }

// Link adds a link.
func (b *Builder) Link(href, label string) string { return b.Add(LinkProps{Href: href, Label: label}) }

// Image adds an image.
func (b *Builder) Image(src, alt string) string { return b.Add(ImageProps{Src: src, Alt: alt}) }

// Button adds a button running the declared action.
func (b *Builder) Button(label, action string) string {
	return b.Add(ButtonProps{Label: label, Action: action})
}

// Callout adds a callout of a tone (info, success, warning, danger).
func (b *Builder) Callout(tone, text string) string {
	return b.Add(CalloutProps{Tone: tone, Text: text})
}

// List adds a list of inline items.
func (b *Builder) List(items ...string) string { return b.Add(ListProps{Items: items}) }

// Table adds a table of a source's records.
func (b *Builder) Table(source string, columns ...Column) string {
	return b.Add(TableProps{Source: source, Columns: columns})
}

// Tab is one tab of Tabs: a label and the node shown under it.
type Tab struct {
	Label string
	Child string
}

// Tabs adds tabs, one per Tab, the first one open.
func (b *Builder) Tabs(tabs ...Tab) string {
	p := TabsProps{}
	var kids []string
	for _, t := range tabs {
		p.Labels = append(p.Labels, t.Label)
		kids = append(kids, t.Child)
	}
	return b.Add(p, kids...)
}

// Form adds a field-form editing the source bind.
func (b *Builder) Form(bind string, fields ...Field) string {
	return b.FormSubmit(bind, "", fields...)
}

// FormSubmit adds a field-form whose save runs the declared action submit.
func (b *Builder) FormSubmit(bind, submit string, fields ...Field) string {
	p := FormProps{Bind: bind, Submit: submit}
	for _, f := range fields {
		p.Fields = append(p.Fields, f.f)
	}
	return b.Add(p)
}

// Source declares a data source.
func (b *Builder) Source(id string, s Source) *Builder {
	b.sources[id] = s
	return b
}

// Action declares an action.
func (b *Builder) Action(id string, a Action) *Builder {
	b.actions[id] = a
	return b
}

// State sets a top-level key of the panel's state.
func (b *Builder) State(key string, value any) *Builder {
	b.state[key] = value
	return b
}

// Spec returns the compiled spec without validating it (for tests of the
// validator and for tools that patch before validating).
func (b *Builder) Spec() (*Spec, error) {
	if len(b.errs) > 0 {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "build panel: %w", errors.Join(b.errs...))
	}
	s := &Spec{V: Version, Origin: b.origin, Root: b.root, Nodes: b.nodes}
	if len(b.sources) > 0 {
		s.Sources = b.sources
	}
	if len(b.actions) > 0 {
		s.Actions = b.actions
	}
	if len(b.state) > 0 {
		raw, err := json.Marshal(b.state)
		if err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "build panel: state: %w", err)
		}
		s.State = raw
	}
	return s, nil
}

// Build compiles and validates the spec with the built-in catalog.
func (b *Builder) Build() (*Spec, error) { return b.BuildWith(nil) }

// BuildWith compiles and validates the spec with opts (a host catalog, say).
// A spec with errors returns the first error's SPEC_* code and every issue
// as the error's Details.
func (b *Builder) BuildWith(opts *Options) (*Spec, error) {
	s, err := b.Spec()
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "build panel: %w", err)
	}
	spec, issues := Validate(raw, opts)
	if e := IssuesError(issues); e != nil {
		return nil, e
	}
	return spec, nil
}

// Mutate is an action applying op (create, update, delete) to source with
// the bound form's values. A delete is marked destructive.
func Mutate(source, op string) Action {
	return Action{Kind: ActionMutate, Source: source, Op: op, Destructive: op == OpDelete}
}

// CallTool is an action calling a registered tool with a fixed input
// object (nil for none).
func CallTool(tool string, input json.RawMessage) Action {
	return Action{Kind: ActionTool, Tool: tool, Input: input}
}

// Refresh is an action reloading source.
func Refresh(source string) Action { return Action{Kind: ActionRefresh, Source: source} }

// StateSource is a source reading path (a JSON pointer) in the panel state.
func StateSource(path string) Source { return Source{Kind: SourceState, Path: path} }

// ToolSource is a source reading the output of a read tool called with
// input (an object, or nil).
func ToolSource(tool string, input json.RawMessage) Source {
	return Source{Kind: SourceTool, Tool: tool, Input: input}
}

// AdapterSource is a source reading a data adapter query (an object).
func AdapterSource(adapter string, query json.RawMessage) Source {
	return Source{Kind: SourceAdapter, Adapter: adapter, Query: query}
}
