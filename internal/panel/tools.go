package panel

import (
	"context"
	"encoding/json"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/panelspec"
)

// Tool names.
const (
	ToolList      = "panel.list"
	ToolDescribe  = "panel.describe"
	ToolOpen      = "panel.open"
	ToolFill      = "panel.fill"
	ToolCompose   = "panel.compose"
	ToolPatch     = "panel.patch"
	ToolRunAction = "panel.run_action"
	ToolClose     = "panel.close"
	ToolReadState = "panel.read_state"
)

// runActionTimeoutMs bounds panel.run_action: it waits for its action's
// call, which may wait for a human's approval.
const runActionTimeoutMs = 10 * 60 * 1000

const sessionProp = `"sessionId": {"type": "string", "description": "The browser session (tab) to act in. Optional when one tab shows panels; otherwise the id given in your context."}`

// Tools returns the panel tools. Their classes: list and describe read;
// open, fill, compose, patch and close are ui (they move a tab's view
// state: which panels are open and what their unsaved fields hold); they
// are api tools nonetheless, because the daemon executes them and holds
// that state (see docs/panels.md). run_action is mutate and asks for no
// approval of its own: the tool it calls carries the approval.
func (s *Service) Tools() []ToolFunc {
	ui := func(name, desc, schema string, fn broker.Func) ToolFunc {
		return ToolFunc{Tool: switchboard.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema),
			Surface: switchboard.SurfaceAPI, Class: switchboard.ClassUI, ViewStateOnly: true}, Func: fn}
	}
	read := func(name, desc, schema string, fn broker.Func) ToolFunc {
		return ToolFunc{Tool: switchboard.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema),
			Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead}, Func: fn}
	}
	return []ToolFunc{
		read(ToolList,
			"List the app's panels (id, title, when to use it, scope, its form fields with kinds and constraints, its actions with destructive flags) and the panels open in the user's tab, with the fields the user has edited and not saved.",
			`{"type": "object", "properties": {`+sessionProp+`}, "additionalProperties": false}`,
			broker.Typed(func(ctx context.Context, in struct {
				SessionID string `json:"sessionId"`
			}) (ListResult, error) {
				return s.List(ctx, in.SessionID)
			})),
		read(ToolReadState,
			"Read one open panel's current state: its values by source and field, the fields the user edited and has not saved (dirty: never overwrite them), the fields agents filled, each action's last outcome, and the lease (which agent is editing it, until when). panelId is the instance id panel.list and the workspace digest show.",
			`{"type": "object", "properties": {
				"panelId": {"type": "string", "description": "the panel instance id (pi_...)"},
				"instanceId": {"type": "string", "description": "the same, under the name the other panel tools use"}
			}, "anyOf": [{"required": ["panelId"]}, {"required": ["instanceId"]}], "additionalProperties": false}`,
			broker.Typed(func(ctx context.Context, in struct {
				PanelID    string `json:"panelId"`
				InstanceID string `json:"instanceId"`
			}) (State, error) {
				id := in.PanelID
				if id == "" {
					id = in.InstanceID
				}
				return s.ReadState(ctx, id)
			})),
		read(ToolDescribe,
			"Describe how to write a panel spec: each node type's props schema, the data adapters sources may read, curated example specs and the rules; with panel, also that registered panel's full spec. Read it before panel.compose.",
			`{"type": "object", "properties": {
				"panel": {"type": "string", "description": "a registered panel id to include"},
				"types": {"type": "array", "items": {"type": "string"}, "description": "only these node types (default all)"},
				"noExamples": {"type": "boolean"}
			}, "additionalProperties": false}`,
			broker.Typed(func(ctx context.Context, in DescribeRequest) (DescribeResult, error) {
				return s.Describe(ctx, in)
			})),
		ui(ToolOpen,
			"Open one of the app's registered panels in the user's tab (panel.list shows them); opening one that is already open shows it again. Returns the instance id and its current values.",
			`{"type": "object", "properties": {
				"panel": {"type": "string", "description": "the panel id"},
				"params": {"type": "object", "description": "the panel's params (panel.list names them)"},
				"scope": {"type": "object", "description": "the seed's name for params"},
				`+sessionProp+`
			}, "required": ["panel"], "additionalProperties": false}`,
			broker.Typed(func(ctx context.Context, in OpenRequest) (instanceView, error) {
				sn, err := s.Open(ctx, in)
				return view(sn, nil), err
			})),
		ui(ToolFill,
			"Fill form fields of an open panel with values (path → value). Only declared fields; a field the user has edited is skipped, never overwritten; nothing is saved (run the form's action with panel.run_action, which asks the user to approve). Reports applied, skipped and errors per field.",
			`{"type": "object", "properties": {
				"instanceId": {"type": "string"},
				"values": {"type": "object", "description": "field path → value (string, number, boolean or a YYYY-MM-DD date, as the field's kind says)"},
				"form": {"type": "string", "description": "the form node id, when two forms declare the same path"}
			}, "required": ["instanceId", "values"], "additionalProperties": false}`,
			broker.Typed(func(ctx context.Context, in FillRequest) (FillResult, error) {
				return s.Fill(ctx, in)
			})),
		ui(ToolCompose,
			"Show your own panel in the user's tab: a Panel Spec (see panel.describe). It is validated first; if it is refused you get every problem with its location and a fix, and one chance to send a corrected spec. The panel is marked as composed by the assistant.",
			`{"type": "object", "properties": {
				"spec": {"type": ["object", "string"], "description": "the panel spec (a JSON object)"},
				"title": {"type": "string"},
				"params": {"type": "object", "description": "values for the spec's $scope.* references"},
				"scope": {"type": "object", "description": "the seed's name for params"},
				"slot": {"type": "string", "description": "the page slot to show it in (default main)"},
				`+sessionProp+`
			}, "required": ["spec"], "additionalProperties": false}`,
			func(ctx context.Context, input json.RawMessage) (any, error) {
				var in ComposeRequest
				if err := json.Unmarshal(input, &in); err != nil {
					return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "decode input: %v", err)
				}
				var text string
				if json.Unmarshal(in.Spec, &text) == nil { // a spec sent as a JSON string
					in.Spec = json.RawMessage(text)
				}
				res, err := s.Compose(ctx, in)
				if err != nil {
					return nil, err
				}
				return view(res.Snapshot, res.Warnings), nil
			}),
		ui(ToolPatch,
			"Change a panel you composed with an RFC 6902 JSON Patch (e.g. [{\"op\": \"replace\", \"path\": \"/nodes/title/props/text\", \"value\": \"New\"}]). All or nothing: a patch that leaves the spec invalid changes nothing. Host panels cannot be patched.",
			`{"type": "object", "properties": {
				"instanceId": {"type": "string"},
				"patch": {"type": "array", "items": {"type": "object"}}
			}, "required": ["instanceId", "patch"], "additionalProperties": false}`,
			broker.Typed(func(ctx context.Context, in PatchRequest) (instanceView, error) {
				res, err := s.Patch(ctx, in)
				return view(res.Snapshot, res.Warnings), err
			})),
		{
			Tool: switchboard.Tool{Name: ToolRunAction,
				Description: "Run a declared action of an open panel (its save button, say), with the panel's current values. This is the only way a panel changes anything; the action's tool asks the user for approval when it needs one. Status: ok, pending_approval, rejected_by_user or error.",
				InputSchema: json.RawMessage(`{"type": "object", "properties": {
					"instanceId": {"type": "string"},
					"action": {"type": "string", "description": "the action id (panel.list shows them)"}
				}, "required": ["instanceId", "action"], "additionalProperties": false}`),
				Surface: switchboard.SurfaceAPI, Class: switchboard.ClassMutate, Approval: switchboard.ApprovalNone,
				TimeoutMs: runActionTimeoutMs},
			Func: broker.Typed(func(ctx context.Context, in ActionRequest) (ActionResult, error) {
				return s.RunAction(ctx, in)
			}),
		},
		ui(ToolClose,
			"Close an open panel in the user's tab. Unsaved values are dropped.",
			`{"type": "object", "properties": {"instanceId": {"type": "string"}}, "required": ["instanceId"], "additionalProperties": false}`,
			broker.Typed(func(ctx context.Context, in struct {
				InstanceID string `json:"instanceId"`
			}) (map[string]any, error) {
				return map[string]any{"instanceId": in.InstanceID, "closed": true}, s.CloseInstance(ctx, in.InstanceID)
			})),
	}
}

// instanceView is what open, compose and patch return to an agent: the
// instance and its values, not the spec it already has.
type instanceView struct {
	// OK and PanelID are the seed's compose_panel success shape {ok,
	// panelId}; PanelID is the instance id, what later calls name.
	OK         bool                          `json:"ok"`
	PanelID    string                        `json:"panelId"`
	InstanceID string                        `json:"instanceId"`
	SessionID  string                        `json:"sessionId"`
	Panel      string                        `json:"panel,omitempty"`
	Title      string                        `json:"title,omitempty"`
	Slot       string                        `json:"slot,omitempty"`
	Version    int                           `json:"version"`
	Values     map[string]map[string]any     `json:"values,omitempty"`
	Dirty      map[string][]string           `json:"dirty,omitempty"`
	Errors     map[string]*switchboard.Error `json:"sourceErrors,omitempty"`
	Warnings   []panelspec.Issue             `json:"warnings,omitempty"`
	Lease      *Lease                        `json:"lease,omitempty"`
}

func view(sn Snapshot, warnings []panelspec.Issue) instanceView {
	v := instanceView{OK: true, PanelID: sn.InstanceID, InstanceID: sn.InstanceID, SessionID: sn.SessionID, Panel: sn.Panel, Title: sn.Title,
		Slot: sn.Slot, Version: sn.Version, Dirty: sn.Dirty, Errors: sn.Errors, Lease: sn.Lease}
	for src, vals := range sn.Values {
		if len(vals) > 0 {
			if v.Values == nil {
				v.Values = map[string]map[string]any{}
			}
			v.Values[src] = vals
		}
	}
	if len(warnings) > 0 {
		v.Warnings = warnings
	}
	return v
}

// State is what panel.read_state returns: one open instance's current
// values, unsaved marks, action outcomes and lease, without its spec.
type State struct {
	PanelID   string                    `json:"panelId"` // the instance id
	SessionID string                    `json:"sessionId"`
	Panel     string                    `json:"panel,omitempty"` // the registered panel, "" when composed
	Title     string                    `json:"title,omitempty"`
	Origin    string                    `json:"origin"`
	Slot      string                    `json:"slot"`
	Version   int                       `json:"version"`
	Values    map[string]map[string]any `json:"values"`
	// Dirty are the fields the user edited and has not saved; Filled those
	// agents filled.
	Dirty   map[string][]string           `json:"dirty"`
	Filled  map[string][]string           `json:"filled"`
	Actions map[string]ActionState        `json:"actions,omitempty"`
	Errors  map[string]*switchboard.Error `json:"sourceErrors,omitempty"`
	// Lease is who is editing the panel now; null when nobody is.
	Lease *Lease `json:"lease"`
}

// ReadState returns one open instance's state as the caller may see it
// (NOT_FOUND outside its tab or panel scope).
func (s *Service) ReadState(ctx context.Context, id string) (State, error) {
	sn, err := s.Snapshot(ctx, id)
	if err != nil {
		return State{}, err
	}
	st := State{PanelID: sn.InstanceID, SessionID: sn.SessionID, Panel: sn.Panel, Title: sn.Title, Origin: sn.Origin,
		Slot: sn.Slot, Version: sn.Version, Values: sn.Values, Dirty: sn.Dirty, Filled: sn.Filled,
		Actions: sn.Actions, Errors: sn.Errors, Lease: sn.Lease}
	if st.Dirty == nil {
		st.Dirty = map[string][]string{}
	}
	if st.Filled == nil {
		st.Filled = map[string][]string{}
	}
	return st, nil
}
