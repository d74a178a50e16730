package panel

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// FieldInfo is a declared form field as panel.list shows it: the field
// with its kind and constraints, plus the form and source it belongs to.
type FieldInfo struct {
	Form   string `json:"form"`
	Source string `json:"source"`
	panelspec.FormField
}

// ActionInfo is a declared action as panel.list shows it.
type ActionInfo struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Label  string `json:"label,omitempty"`
	Source string `json:"source,omitempty"`
	Op     string `json:"op,omitempty"`
	// Tool is what running the action calls through the broker (empty for
	// actions that stay inside the panel).
	Tool        string `json:"tool,omitempty"`
	Destructive bool   `json:"destructive,omitempty"`
	Confirm     string `json:"confirm,omitempty"`
}

// PanelInfo is a registered panel as panel.list shows it. It carries the
// seed's list_panels entry {id, title, agentDescription, scope,
// contextKinds, fields, actions, openInstances} as well as our names
// (description is agentDescription; docs/panels.md has the mapping).
type PanelInfo struct {
	ID               string       `json:"id"`
	Title            string       `json:"title"`
	Description      string       `json:"description"`
	AgentDescription string       `json:"agentDescription"`
	Scope            string       `json:"scope,omitempty"`
	Slot             string       `json:"slot"`
	ContextKinds     []string     `json:"contextKinds"`
	Params           []string     `json:"params,omitempty"`
	Fields           []FieldInfo  `json:"fields"`
	Actions          []ActionInfo `json:"actions"`
	// OpenInstances are the ids of this panel's instances open in the
	// listed tabs, oldest first.
	OpenInstances []string `json:"openInstances"`
}

// ListResult is what panel.list returns.
type ListResult struct {
	Panels    []PanelInfo `json:"panels"`
	Instances []Summary   `json:"instances"`
}

// List returns the registered panels and the open instances: of the named
// tab, of the calling tab, or else of every connected tab, this replica's
// and (as stored) those other replicas hold; for an agent
// with a panel scope, only those it admits. Each instance carries the
// lease in force on it.
func (s *Service) List(ctx context.Context, sessionID string) (ListResult, error) {
	if p, ok := switchboard.PrincipalFrom(ctx); ok && p.Kind == switchboard.PrincipalSession {
		sessionID = p.ID
	}
	scopes, who := s.panelScopes(ctx), caller(ctx)
	res := ListResult{Panels: []PanelInfo{}, Instances: []Summary{}}
	if own, ok := s.ownSurface(ctx); ok {
		s.ensureTab(ctx, own)
	}
	// Of another principal's chat surface nothing is listed.
	hidden := !seesSession(ctx, sessionID)
	s.mu.Lock()
	ids := make([]string, 0, len(s.defs))
	for id, d := range s.defs {
		if admitsDef(scopes, d) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		res.Panels = append(res.Panels, s.infoLocked(s.defs[id]))
	}
	for id, t := range s.sessions {
		if hidden || (sessionID != "" && id != sessionID) || (sessionID == "" && (!s.tabs.Connected(id) || !seesSession(ctx, id))) {
			continue
		}
		for _, iid := range t.order {
			if in := t.instances[iid]; admits(scopes, who, in) {
				res.Instances = append(res.Instances, in.summary())
			}
		}
	}
	_, here := s.sessions[sessionID]
	s.mu.Unlock()
	for i := range res.Instances {
		res.Instances[i].Lease = s.leases.get(res.Instances[i].InstanceID)
	}
	var away []string // tabs this replica does not hold: their instances as stored
	switch {
	case hidden || s.store == nil:
	case sessionID != "" && !here: // (or holds since a moment ago)
		away = []string{sessionID}
	case sessionID == "" && s.remote != nil: // every tab other replicas hold
		for _, id := range s.tabs.TabsElsewhere() {
			if !s.tabs.Connected(id) && seesSession(ctx, id) {
				away = append(away, id)
			}
		}
		sort.Strings(away)
	}
	now := s.opts.Now()
	for _, id := range away {
		for _, in := range s.storedTab(ctx, id) {
			if admits(scopes, who, in) {
				sum := in.summary()
				sum.Lease = in.liveLease(now)
				res.Instances = append(res.Instances, sum)
			}
		}
	}
	sort.SliceStable(res.Instances, func(i, j int) bool { return res.Instances[i].SessionID < res.Instances[j].SessionID })
	for i := range res.Panels {
		for _, in := range res.Instances {
			if in.Panel == res.Panels[i].ID {
				res.Panels[i].OpenInstances = append(res.Panels[i].OpenInstances, in.InstanceID)
			}
		}
	}
	return res, nil
}

// infoLocked describes a registered panel. Caller holds s.mu.
func (s *Service) infoLocked(d *def) PanelInfo {
	fields, actions := describeSpec(d.Spec, s)
	kinds := d.ContextKinds
	if kinds == nil {
		kinds = []string{}
	}
	return PanelInfo{ID: d.ID, Title: d.Title, Description: d.Description, AgentDescription: d.Description, Scope: d.Scope, Slot: d.Slot,
		ContextKinds: kinds, Params: d.params, Fields: fields, Actions: actions, OpenInstances: []string{}}
}

// describeSpec lists the fields and actions of spec. Caller holds s.mu.
func describeSpec(spec *panelspec.Spec, s *Service) ([]FieldInfo, []ActionInfo) {
	fields := []FieldInfo{}
	labels := map[string]string{}
	for _, f := range formsOf(spec) {
		for _, fld := range f.fields {
			fields = append(fields, FieldInfo{Form: f.node, Source: f.bind, FormField: fld})
		}
		if f.submit != "" {
			var p panelspec.FormProps
			_ = json.Unmarshal(spec.Nodes[f.node].Props, &p)
			labels[f.submit] = p.SubmitLabel
			if labels[f.submit] == "" {
				labels[f.submit] = "Save"
			}
		}
	}
	for _, n := range spec.Nodes {
		if n.Type == panelspec.TypeButton {
			var p panelspec.ButtonProps
			if json.Unmarshal(n.Props, &p) == nil && labels[p.Action] == "" {
				labels[p.Action] = p.Label
			}
		}
	}
	actions := []ActionInfo{}
	for id, a := range spec.Actions {
		tool, _ := s.targetToolLocked(spec, a)
		actions = append(actions, ActionInfo{ID: id, Kind: a.Kind, Label: labels[id], Source: a.Source, Op: a.Op,
			Tool: tool, Destructive: a.Destructive, Confirm: a.Confirm})
	}
	sort.Slice(actions, func(i, j int) bool { return actions[i].ID < actions[j].ID })
	return fields, actions
}

// TypeInfo is one catalog type as panel.describe shows it.
type TypeInfo struct {
	Type  string          `json:"type"`
	Props json.RawMessage `json:"props"`
}

// AdapterInfo is a data adapter panel sources may name.
type AdapterInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Query       json.RawMessage `json:"query,omitempty"`
	Record      json.RawMessage `json:"record,omitempty"`
}

// DescribeRequest selects what panel.describe returns.
type DescribeRequest struct {
	// Panel, when set, adds that registered panel's whole spec.
	Panel string `json:"panel,omitempty"`
	// Types limits the catalog to these types (default: all).
	Types []string `json:"types,omitempty"`
	// NoExamples leaves the curated examples out.
	NoExamples bool `json:"noExamples,omitempty"`
}

// PanelDetail is a registered panel with its spec and sources.
type PanelDetail struct {
	PanelInfo
	Sources map[string]panelspec.Source `json:"sources,omitempty"`
	Spec    *panelspec.Spec             `json:"spec"`
}

// DescribeResult is what panel.describe returns: what an agent needs to
// compose a valid spec first time.
type DescribeResult struct {
	Version  int                 `json:"version"`
	Panel    *PanelDetail        `json:"panel,omitempty"`
	Catalog  []TypeInfo          `json:"catalog"`
	Adapters []AdapterInfo       `json:"adapters"`
	Examples []panelspec.Example `json:"examples,omitempty"`
	Rules    []string            `json:"rules"`
}

// rules are the constraints a model most often trips over, stated once.
var rules = []string{
	`A spec is {"v":1,"root":id,"nodes":{id:{type,props,children?}},"sources"?,"state"?,"actions"?}; children are node ids.`,
	"At most 200 nodes, depth at most 12, strings at most 8 KiB.",
	"Buttons and form submits name a declared action id; actions are never URLs. Only panel.run_action runs them, through approvals.",
	"Links: http, https, mailto or relative; images: http, https, relative or a raster data: URL. No HTML, Markdown, CSS or event handlers: every string is plain text.",
	"A form binds to a source (kind state, tool or adapter) and names fields by dot path; a tool source must be a read tool.",
	`A source may also be written {"source": "<adapter or read tool>", "params": {...}}; strings "$scope.x" and "$state.x" in params are filled from the panel's scope (open/compose params) and its state.`,
}

// Describe returns the catalog (each type's props schema), the data
// adapters, the curated example specs and, when asked, a registered
// panel's spec.
func (s *Service) Describe(ctx context.Context, req DescribeRequest) (DescribeResult, error) {
	res := DescribeResult{Version: panelspec.Version, Catalog: []TypeInfo{}, Adapters: []AdapterInfo{}, Rules: rules}
	if req.Panel != "" {
		scopes := s.panelScopes(ctx)
		s.mu.Lock()
		d := s.defs[req.Panel]
		if d != nil && !admitsDef(scopes, d) {
			d = nil // out of the caller's scope: answered as unknown
		}
		if d != nil {
			res.Panel = &PanelDetail{PanelInfo: s.infoLocked(d), Sources: d.Spec.Sources, Spec: d.Spec}
		}
		s.mu.Unlock()
		if d == nil {
			return DescribeResult{}, switchboard.Errorf(switchboard.CodeNotFound, "no panel %q", req.Panel)
		}
	}
	types := req.Types
	if len(types) == 0 {
		types = s.cat.Types()
	}
	for _, t := range types {
		schema, ok := s.cat.Schema(t)
		if !ok {
			return DescribeResult{}, switchboard.Errorf(switchboard.CodeNotFound, "no node type %q; types: %s", t, orNone(s.cat.Types()))
		}
		res.Catalog = append(res.Catalog, TypeInfo{Type: t, Props: schema})
	}
	s.mu.Lock()
	for _, e := range s.adapters {
		res.Adapters = append(res.Adapters, AdapterInfo{Name: e.name, Description: e.opts.Description, Query: e.opts.QuerySchema, Record: e.opts.RecordSchema})
	}
	s.mu.Unlock()
	sort.Slice(res.Adapters, func(i, j int) bool { return res.Adapters[i].Name < res.Adapters[j].Name })
	if !req.NoExamples {
		res.Examples = panelspec.Examples()
	}
	return res, nil
}
