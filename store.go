package switchboard

import (
	"context"
	"time"
)

// Store is the persistence port. Drivers (sqlite, postgres) implement it and
// pass the storetest conformance suite; nothing above a driver knows which
// database it talks to. Drivers translate their own errors into *Error
// values: ErrNotFound for missing rows, ErrConflict for unique violations and
// failed compare-and-swaps, CodeUnavailable for busy or failing storage.
type Store interface {
	// ToolPut upserts a batch of tools of one source atomically: all or
	// nothing. Each stored tool gets Origin.Source = source and Version = the
	// catalog revision of this write.
	ToolPut(ctx context.Context, source Source, tools []Tool) error
	// ToolDelete removes one source's declaration of name (ErrNotFound if
	// there is none) and bumps the catalog revision.
	ToolDelete(ctx context.Context, source Source, name string) error
	// ToolList returns every declaration of every source, ordered by name
	// then source rank. Merging by precedence is the registry's job.
	ToolList(ctx context.Context) ([]Tool, error)
	// CatalogRevision is a counter that grows with every catalog write, so a
	// cache can tell cheaply whether it is stale.
	CatalogRevision(ctx context.Context) (int64, error)

	// InvocationCreate inserts a new record (ErrConflict if the ID exists).
	InvocationCreate(ctx context.Context, inv Invocation) error
	// InvocationGet returns one record or ErrNotFound.
	InvocationGet(ctx context.Context, id string) (Invocation, error)
	// InvocationUpdate is a compare-and-swap: it stores inv's mutable fields
	// (status, session, result, error, sizes, timestamps) only if the stored
	// status is one of from, and returns the stored record. Otherwise it
	// changes nothing and returns the current record with ErrConflict.
	InvocationUpdate(ctx context.Context, inv Invocation, from ...Status) (Invocation, error)
	// InvocationFailInFlight moves every non-terminal record to failed with
	// the given error; called at start so nothing stays pending across a
	// restart. It returns how many it moved.
	InvocationFailInFlight(ctx context.Context, at time.Time, cause *Error) (int, error)

	// SessionCreate, SessionGet and SessionClose keep browser sessions so a
	// tab's token can be checked on any replica.
	SessionCreate(ctx context.Context, s Session) error
	SessionGet(ctx context.Context, id string) (Session, error)
	SessionClose(ctx context.Context, id string, at time.Time) error

	// ActivityAppend appends e, assigning ID, PrevHash and Hash inside one
	// transaction so the chain has no forks.
	ActivityAppend(ctx context.Context, e *ActivityEntry) error
	// ActivityList pages the ledger oldest first (see ActivityFilter).
	ActivityList(ctx context.Context, f ActivityFilter) ([]ActivityEntry, error)

	Close() error
}
