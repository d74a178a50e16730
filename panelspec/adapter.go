package panelspec

import (
	"context"
	"encoding/json"

	"github.com/switchboardhq/switchboard"
)

// Record is one row or document a DataAdapter returns.
type Record = map[string]any

// AdapterScope says on whose behalf an adapter call runs: the principal of
// the caller (the user who opened a panel, the agent that composed it, the
// caller of a data tool) and the tab, when there is one. An adapter may
// narrow what it returns or accepts by it (a tenant column, say).
type AdapterScope struct {
	Principal switchboard.Principal
	SessionID string
}

// Mutation is one change an adapter applies: Op is OpCreate, OpUpdate or
// OpDelete; Key identifies the record for update and delete; Values are
// the fields to write for create and update.
type Mutation struct {
	Op     string `json:"op"`
	Key    any    `json:"key,omitempty"`
	Values Record `json:"values,omitempty"`
}

// DataAdapter is the port between panel sources of kind SourceAdapter and
// the data they show; a host registers one with the daemon
// (daemon.RegisterAdapter). Every method is scoped and cancellable (ctx).
//
// Query answers a source's query (the adapter defines its shape; the SQL
// adapter takes {where, orderBy, desc, limit}). Mutate applies one change
// and returns the record as stored (nil for a delete). Subscribe calls fn —
// which must not block — whenever the records a query may return could
// have changed, until ctx ends: at least after every successful Mutate
// through this adapter, so panels showing the data refresh when another
// panel (or an agent, or the CLI) saves. An invalid query is INVALID_INPUT.
type DataAdapter interface {
	Query(ctx context.Context, scope AdapterScope, query json.RawMessage) ([]Record, error)
	Mutate(ctx context.Context, scope AdapterScope, m Mutation) (Record, error)
	Subscribe(ctx context.Context, scope AdapterScope, query json.RawMessage, fn func()) error
}
