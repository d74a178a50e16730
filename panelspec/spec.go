package panelspec

import (
	"encoding/json"

	"github.com/switchboardhq/switchboard"
)

// Version is the current version of the Panel Spec IR. Older versions are
// migrated on the way in (see migrate.go); newer ones are refused.
const Version = 1

// Origins of a spec. An agent-composed panel always carries OriginAgent so
// the renderer can show a provenance badge.
const (
	OriginHost  = "host"
	OriginAgent = "agent"
)

// Spec is the Panel Spec IR: a flat map of nodes plus the data sources and
// declared actions they refer to. It is the only shape a renderer ever sees,
// and only after Validate accepted it.
type Spec struct {
	V       int               `json:"v"`
	Origin  string            `json:"origin"`
	Root    string            `json:"root"`
	Sources map[string]Source `json:"sources,omitempty"`
	// State is panel-local data (initial form values, inline records). It is
	// kept verbatim; sources of kind "state" point into it.
	State   json.RawMessage   `json:"state,omitempty"`
	Nodes   map[string]Node   `json:"nodes"`
	Actions map[string]Action `json:"actions,omitempty"`
}

// Node is one UI element. Props are validated against the catalog schema of
// Type; Children are node ids, rendered in order.
type Node struct {
	Type     string          `json:"type"`
	Props    json.RawMessage `json:"props,omitempty"`
	Children []string        `json:"children,omitempty"`
}

// Source kinds.
const (
	SourceState   = "state"   // Path is a JSON pointer into Spec.State
	SourceTool    = "tool"    // the output of a read tool (Tool, Input)
	SourceAdapter = "adapter" // a DataAdapter query (Adapter, Query)
)

// Source is a named piece of data that forms, tables and lists bind to.
// It takes one of two forms: the rich form names its Kind (state, tool or
// adapter) and what that kind needs; the seed's documented form names a
// source Ref ("site.seo") with Params, and the runtime resolves the ref to
// a data adapter of that name or else a read tool of that name (see
// docs/panels.md, "The seed's source form").
type Source struct {
	Kind    string          `json:"kind,omitempty"`
	Path    string          `json:"path,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
	Adapter string          `json:"adapter,omitempty"`
	Query   json.RawMessage `json:"query,omitempty"`
	// Key names the record field that identifies a record for mutations.
	Key string `json:"key,omitempty"`
	// Ref is the seed form's source reference: an adapter or read tool name.
	Ref string `json:"source,omitempty"`
	// Params are the seed form's arguments: the adapter's query or the
	// tool's input. Strings "$scope.<path>" and "$state.<path>" are filled
	// at load time from the panel's scope (panel.open's params) and its
	// state; "$$" at the start of a string stands for a literal "$".
	Params json.RawMessage `json:"params,omitempty"`
	// Schema is the JSON Schema of one record of this source. A field-form
	// bound to the source without fields of its own takes its fields from
	// it (see fieldsFromSchema).
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Seed-form reference prefixes in Source.Params.
const (
	RefScope = "$scope."
	RefState = "$state."
)

// Action kinds.
const (
	ActionMutate  = "mutate"  // Op on Source with the bound form's values
	ActionTool    = "tool"    // call the registered tool Tool with Input
	ActionRefresh = "refresh" // reload Source
)

// Mutation ops of an ActionMutate.
const (
	OpCreate = "create"
	OpUpdate = "update"
	OpDelete = "delete"
)

// Action is a declared effect. Buttons and forms name actions by id; an
// action is never a URL. Running one goes through the broker (approvals,
// ledger), which is why Destructive is part of the contract.
type Action struct {
	Kind        string          `json:"kind"`
	Source      string          `json:"source,omitempty"`
	Op          string          `json:"op,omitempty"`
	Tool        string          `json:"tool,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"`
	Destructive bool            `json:"destructive,omitempty"`
	// Confirm is the question shown to the user before the action runs.
	Confirm string `json:"confirm,omitempty"`
}

// Severity of an Issue. Only errors make Validate refuse a spec.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Issue is one problem found by Validate. Pointer is an RFC 6901 JSON
// pointer into the (migrated) spec; Suggestion is a short phrase naming the
// nearest valid alternative, written for both people and models.
type Issue struct {
	Code       switchboard.Code `json:"code"`
	Severity   Severity         `json:"severity"`
	NodeID     string           `json:"nodeId,omitempty"`
	Pointer    string           `json:"pointer"`
	Message    string           `json:"message"`
	Suggestion string           `json:"suggestion,omitempty"`
}

// HasErrors reports whether any issue is an error (not just a warning).
func HasErrors(issues []Issue) bool {
	for _, is := range issues {
		if is.Severity == SeverityError {
			return true
		}
	}
	return false
}

// IssuesError turns the errors among issues into one *switchboard.Error
// carrying the code of the first error and every issue as Details, or nil
// when there is no error. Transports map it like any coded error.
func IssuesError(issues []Issue) *switchboard.Error {
	for _, is := range issues {
		if is.Severity != SeverityError {
			continue
		}
		n := 0
		for _, x := range issues {
			if x.Severity == SeverityError {
				n++
			}
		}
		msg := is.Message
		if is.Pointer != "" {
			msg = is.Pointer + ": " + msg
		}
		if n > 1 {
			return switchboard.Errorf(is.Code, "invalid panel spec: %s (and %d more)", msg, n-1).WithDetails(issues)
		}
		return switchboard.Errorf(is.Code, "invalid panel spec: %s", msg).WithDetails(issues)
	}
	return nil
}
