package panel

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// The adapter port is public (package panelspec), since hosts implement
// it; these names keep the engine's spelling.
type (
	Record      = panelspec.Record
	Scope       = panelspec.AdapterScope
	Mutation    = panelspec.Mutation
	DataAdapter = panelspec.DataAdapter
)

// Mutation ops, as in panel actions.
const (
	OpCreate = "create"
	OpUpdate = "update"
	OpDelete = "delete"
)

// AdapterOptions says how an adapter is exposed as tools.
type AdapterOptions struct {
	// Description says what the data is ("the projects of the studio").
	Description string
	// Ops are the mutations offered as tools (default create, update,
	// delete). A mutate action on an op not offered fails.
	Ops []string
	// Approval per op (default: none for create and update, hitl for
	// delete). The broker's policy decides what the value means.
	Approval map[string]switchboard.Approval
	// QuerySchema and RecordSchema, when set, are the JSON Schemas of the
	// adapter's query and of a record's values; they make the data tools'
	// input schemas precise (default: any object).
	QuerySchema  json.RawMessage
	RecordSchema json.RawMessage
}

type adapterEntry struct {
	name string
	a    DataAdapter
	opts AdapterOptions
	// declared: PutAdapter's (an app's declaration, replaceable), not
	// RegisterAdapter's.
	declared bool
	// changed tells the other replicas a mutation went through (their
	// panels showing the adapter refresh; remote.go).
	changed func()
}

// ToolFunc is one tool the service serves: its declaration and its Go
// function. The daemon registers both (declaration in the registry,
// function with broker.Handle).
type ToolFunc struct {
	Tool switchboard.Tool
	Func func(ctx context.Context, input json.RawMessage) (any, error)
}

// AdapterToolName is the tool that applies op (or "query") to adapter name.
func AdapterToolName(name, op string) string { return "data." + name + "." + op }

// RegisterAdapter makes a under name available to panel sources of kind
// adapter and returns its data tools: data.<name>.query (read) and
// data.<name>.<op> for each offered op (mutate). Panel mutate actions call
// those tools through the broker; so may agents, MCP clients and the CLI.
func (s *Service) RegisterAdapter(name string, a DataAdapter, opts AdapterOptions) ([]ToolFunc, error) {
	return s.putAdapter(name, a, opts, false)
}

// PutAdapter is RegisterAdapter for an adapter an app declared (over HTTP
// or in a manifest), which a later declaration of the same name replaces.
// A name RegisterAdapter holds is CONFLICT.
func (s *Service) PutAdapter(name string, a DataAdapter, opts AdapterOptions) ([]ToolFunc, error) {
	return s.putAdapter(name, a, opts, true)
}

// CheckAdapter reports the error PutAdapter would answer for name and
// opts, registering nothing.
func (s *Service) CheckAdapter(name string, opts AdapterOptions) error {
	_, err := adapterOptions(name, opts)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.adapters[name]; e != nil && !e.declared {
		return switchboard.Errorf(switchboard.CodeConflict, "adapter %s is registered by the host's Go code; choose another name", name)
	}
	return nil
}

func adapterOptions(name string, opts AdapterOptions) (AdapterOptions, error) {
	if len(name) > 48 || !panelID.MatchString(name) {
		return opts, switchboard.Errorf(switchboard.CodeInvalidInput, "adapter name %q must be dot-separated lowercase words", name)
	}
	if opts.Ops == nil {
		opts.Ops = []string{OpCreate, OpUpdate, OpDelete}
	}
	for _, op := range opts.Ops {
		if op != OpCreate && op != OpUpdate && op != OpDelete {
			return opts, switchboard.Errorf(switchboard.CodeInvalidInput, "adapter %s: op %q is not create, update or delete", name, op)
		}
	}
	if opts.Description == "" {
		opts.Description = "the " + name + " records"
	}
	return opts, nil
}

func (s *Service) putAdapter(name string, a DataAdapter, opts AdapterOptions, declared bool) ([]ToolFunc, error) {
	if a == nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "adapter %s: no adapter", name)
	}
	opts, err := adapterOptions(name, opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if old, dup := s.adapters[name]; dup && !(declared && old.declared) {
		s.mu.Unlock()
		return nil, switchboard.Errorf(switchboard.CodeConflict, "adapter %s is already registered", name)
	}
	e := &adapterEntry{name: name, a: a, opts: opts, declared: declared, changed: func() { s.adapterChanged(name) }}
	s.adapters[name] = e
	s.mu.Unlock()
	return e.tools(), nil
}

// RemoveAdapter removes adapter name that PutAdapter registered and
// reports whether there was one. Panels showing it keep the data they
// have; their next load reports the adapter missing.
func (s *Service) RemoveAdapter(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.adapters[name]
	if e == nil || !e.declared {
		return false
	}
	delete(s.adapters, name)
	return true
}

// InvalidateAdapter reloads the adapter sources of every open panel that
// shows adapter name's data, on this replica and (over the bus) on the
// others: the app's backend says its data changed.
func (s *Service) InvalidateAdapter(name string) {
	s.refreshAdapter(name)
	s.adapterChanged(name)
}

// refreshAdapter reloads this replica's instances that show adapter name.
func (s *Service) refreshAdapter(name string) {
	s.mu.Lock()
	var hit []*instance
	for _, in := range s.byID {
		for _, src := range in.spec.Sources {
			if src := s.richLocked(src); src.Kind == panelspec.SourceAdapter && src.Adapter == name {
				hit = append(hit, in)
				break
			}
		}
	}
	s.mu.Unlock()
	for _, in := range hit {
		s.invalidate(in)
	}
}

// AdapterTools declares the data tools RegisterAdapter would return for
// name and opts, for an adapter whose tools are bound elsewhere (an app's
// backend over HTTP); their functions must not be called.
func AdapterTools(name string, opts AdapterOptions) ([]ToolFunc, error) {
	opts, err := adapterOptions(name, opts)
	if err != nil {
		return nil, err
	}
	e := &adapterEntry{name: name, opts: opts}
	return e.tools(), nil
}

func (s *Service) adapter(name string) (DataAdapter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.adapters[name]
	if e == nil {
		names := make([]string, 0, len(s.adapters))
		for n := range s.adapters {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, switchboard.Errorf(switchboard.CodeNotFound, "no data adapter %q; registered: %s", name, orNone(names))
	}
	return e.a, nil
}

// offersLocked reports whether adapter name exposes op as a tool. Caller
// holds s.mu.
func (s *Service) offersLocked(name, op string) bool {
	e := s.adapters[name]
	if e == nil {
		return false
	}
	for _, o := range e.opts.Ops {
		if o == op {
			return true
		}
	}
	return false
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func schemaOr(s json.RawMessage) string {
	if len(s) == 0 {
		return `{"type":"object"}`
	}
	return string(s)
}

// tools declares the adapter's data tools.
func (e *adapterEntry) tools() []ToolFunc {
	scope := func(ctx context.Context) Scope {
		p, _ := switchboard.PrincipalFrom(ctx)
		return Scope{Principal: p}
	}
	out := []ToolFunc{{
		Tool: switchboard.Tool{
			Name:        AdapterToolName(e.name, "query"),
			Description: fmt.Sprintf("Query %s (data adapter %s). Panels show the same records through sources of kind adapter.", e.opts.Description, e.name),
			InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"query":%s},"additionalProperties":false}`, schemaOr(e.opts.QuerySchema))),
			Surface:     switchboard.SurfaceAPI, Class: switchboard.ClassRead,
		},
		Func: func(ctx context.Context, input json.RawMessage) (any, error) {
			var in struct {
				Query json.RawMessage `json:"query"`
			}
			if err := json.Unmarshal(input, &in); err != nil {
				return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "decode input: %v", err)
			}
			recs, err := e.a.Query(ctx, scope(ctx), in.Query)
			if recs == nil && err == nil {
				recs = []Record{}
			}
			return map[string]any{"records": recs}, err
		},
	}}
	for _, op := range e.opts.Ops {
		approval := e.opts.Approval[op]
		if approval == "" {
			approval = switchboard.ApprovalNone
			if op == OpDelete {
				approval = switchboard.ApprovalHITL
			}
		}
		var props, required, what string
		switch op {
		case OpCreate:
			props, required, what = `"values":`+schemaOr(e.opts.RecordSchema), `["values"]`, "Create a record in"
		case OpUpdate:
			props, required, what = `"key":{"description":"the record's key"},"values":`+schemaOr(e.opts.RecordSchema), `["key","values"]`, "Update the given fields of one record of"
		case OpDelete:
			props, required, what = `"key":{"description":"the record's key"}`, `["key"]`, "Delete one record of"
		}
		op := op
		out = append(out, ToolFunc{
			Tool: switchboard.Tool{
				Name:        AdapterToolName(e.name, op),
				Description: fmt.Sprintf("%s %s (data adapter %s). Open panels showing these records refresh.", what, e.opts.Description, e.name),
				InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%s},"required":%s,"additionalProperties":false}`, props, required)),
				Surface:     switchboard.SurfaceAPI, Class: switchboard.ClassMutate, Approval: approval,
			},
			Func: func(ctx context.Context, input json.RawMessage) (any, error) {
				var m Mutation
				if err := json.Unmarshal(input, &m); err != nil {
					return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "decode input: %v", err)
				}
				m.Op = op
				rec, err := e.a.Mutate(ctx, scope(ctx), m)
				if err != nil {
					return nil, err
				}
				e.changed()
				return map[string]any{"record": rec}, nil
			},
		})
	}
	return out
}
