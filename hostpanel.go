package switchboard

import (
	"encoding/json"
	"time"
)

// HostPanel is a host panel an app declares over HTTP (POST
// /api/v1/panels) or in its manifest's panels section: the spec (the Panel
// Spec IR, origin host) and what an agent needs to choose it. The daemon
// validates the spec whole before it keeps any of it.
type HostPanel struct {
	// ID names the panel (dot-separated lowercase words): "project.settings".
	ID    string `json:"id"`
	Title string `json:"title"`
	// Description tells an agent when to open the panel and what it edits.
	Description string `json:"description"`
	// Scope says what the panel applies to ("one project; open with
	// params.projectId").
	Scope string `json:"scope,omitempty"`
	// ContextKinds are the tab context kinds the panel applies to; empty
	// means any.
	ContextKinds []string `json:"contextKinds,omitempty"`
	// Slot is the page slot the panel is shown in ("main" when empty).
	Slot string          `json:"slot,omitempty"`
	Spec json.RawMessage `json:"spec"`
}

// HostAdapter is a data adapter an app serves from its own backend over
// HTTP (POST /api/v1/adapters, or a manifest's adapters section): panel
// sources of kind adapter read it with Query, and its data tools
// (data.<name>.query, data.<name>.<op>) are api tools bound to Query and
// to Mutate's bindings, with the same binding rules and the same
// Switchboard-Assertion header as any api tool. The backend tells the
// daemon its data changed with POST /api/v1/adapters/{name}/invalidate.
type HostAdapter struct {
	// Name is the adapter panel sources name (dot-separated lowercase words).
	Name string `json:"name"`
	// Description says what the data is ("the projects of the studio").
	Description string `json:"description,omitempty"`
	// Query answers a source's query: the request carries {"query": ...}
	// and the backend answers {"records": [...]} (or the bare array).
	Query *HTTPBinding `json:"query"`
	// Mutate binds each offered op (create, update, delete) to a request;
	// an op without a binding is not offered. Inputs are the data tools':
	// {values} for create, {key, values} for update, {key} for delete.
	Mutate map[string]*HTTPBinding `json:"mutate,omitempty"`
	// Approval per op (default none for create and update, hitl for delete).
	Approval map[string]Approval `json:"approval,omitempty"`
	// QuerySchema and RecordSchema, when set, are the JSON Schemas of the
	// query and of a record's values (the data tools' input schemas).
	QuerySchema  json.RawMessage `json:"querySchema,omitempty"`
	RecordSchema json.RawMessage `json:"recordSchema,omitempty"`
}

// Kinds of PanelRegistration.
const (
	RegistrationPanel   = "panel"
	RegistrationAdapter = "adapter"
)

// PanelRegistration is one host panel or data adapter declared over HTTP,
// as the store keeps it so that every replica, and the daemon after a
// restart, serves it: Kind is RegistrationPanel (Definition a HostPanel)
// or RegistrationAdapter (a HostAdapter), Name its id or name.
type PanelRegistration struct {
	Kind       string          `json:"kind"`
	Name       string          `json:"name"`
	Definition json.RawMessage `json:"definition"`
	UpdatedAt  time.Time       `json:"updatedAt"`
}
