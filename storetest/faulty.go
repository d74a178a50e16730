package storetest

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Faulty wraps a Store and fails chosen calls before they reach it, the way
// a busy or failing database would (RELIABILITY.md row 17): the call returns
// the injected error and the wrapped store is not touched, so nothing is
// half-written and a retry reaches the real store.
//
// FailNext is asked before every call with the method name ("ToolPut",
// "ActivityAppend", ...); a non-nil result is returned instead of calling
// the store. It may be called from many goroutines at once. Close is never
// intercepted.
type Faulty struct {
	switchboard.Store
	FailNext func(op string) error
}

var _ switchboard.Store = (*Faulty)(nil)

// Busy returns the error a driver reports when its database is locked.
func Busy(op string) error {
	return switchboard.Errorf(switchboard.CodeUnavailable, "%s: database is locked (injected)", op)
}

// FailOnce returns a FailNext that fails the first call of op with err and
// lets every other call through.
func FailOnce(op string, err error) func(string) error {
	return FailTimes(op, 1, err)
}

// FailTimes returns a FailNext that fails the first n calls of op with err.
func FailTimes(op string, n int, err error) func(string) error {
	var left atomic.Int64
	left.Store(int64(n))
	return func(got string) error {
		if got == op && left.Add(-1) >= 0 {
			return err
		}
		return nil
	}
}

func (f *Faulty) fail(op string) error {
	if f.FailNext == nil {
		return nil
	}
	return f.FailNext(op)
}

func (f *Faulty) ToolPut(ctx context.Context, source switchboard.Source, tools []switchboard.Tool) error {
	if err := f.fail("ToolPut"); err != nil {
		return err
	}
	return f.Store.ToolPut(ctx, source, tools)
}

func (f *Faulty) ToolDelete(ctx context.Context, source switchboard.Source, name string) error {
	if err := f.fail("ToolDelete"); err != nil {
		return err
	}
	return f.Store.ToolDelete(ctx, source, name)
}

func (f *Faulty) ToolList(ctx context.Context) ([]switchboard.Tool, error) {
	if err := f.fail("ToolList"); err != nil {
		return nil, err
	}
	return f.Store.ToolList(ctx)
}

func (f *Faulty) CatalogRevision(ctx context.Context) (int64, error) {
	if err := f.fail("CatalogRevision"); err != nil {
		return 0, err
	}
	return f.Store.CatalogRevision(ctx)
}

func (f *Faulty) InvocationCreate(ctx context.Context, inv switchboard.Invocation) error {
	if err := f.fail("InvocationCreate"); err != nil {
		return err
	}
	return f.Store.InvocationCreate(ctx, inv)
}

func (f *Faulty) InvocationGet(ctx context.Context, id string) (switchboard.Invocation, error) {
	if err := f.fail("InvocationGet"); err != nil {
		return switchboard.Invocation{}, err
	}
	return f.Store.InvocationGet(ctx, id)
}

func (f *Faulty) InvocationUpdate(ctx context.Context, inv switchboard.Invocation, from ...switchboard.Status) (switchboard.Invocation, error) {
	if err := f.fail("InvocationUpdate"); err != nil {
		return switchboard.Invocation{}, err
	}
	return f.Store.InvocationUpdate(ctx, inv, from...)
}

func (f *Faulty) InvocationFailInFlight(ctx context.Context, at time.Time, cause *switchboard.Error) (int, error) {
	if err := f.fail("InvocationFailInFlight"); err != nil {
		return 0, err
	}
	return f.Store.InvocationFailInFlight(ctx, at, cause)
}

func (f *Faulty) SessionCreate(ctx context.Context, s switchboard.Session) error {
	if err := f.fail("SessionCreate"); err != nil {
		return err
	}
	return f.Store.SessionCreate(ctx, s)
}

func (f *Faulty) SessionGet(ctx context.Context, id string) (switchboard.Session, error) {
	if err := f.fail("SessionGet"); err != nil {
		return switchboard.Session{}, err
	}
	return f.Store.SessionGet(ctx, id)
}

func (f *Faulty) SessionClose(ctx context.Context, id string, at time.Time) error {
	if err := f.fail("SessionClose"); err != nil {
		return err
	}
	return f.Store.SessionClose(ctx, id, at)
}

func (f *Faulty) ActivityAppend(ctx context.Context, e *switchboard.ActivityEntry) error {
	if err := f.fail("ActivityAppend"); err != nil {
		return err
	}
	return f.Store.ActivityAppend(ctx, e)
}

func (f *Faulty) ActivityList(ctx context.Context, fl switchboard.ActivityFilter) ([]switchboard.ActivityEntry, error) {
	if err := f.fail("ActivityList"); err != nil {
		return nil, err
	}
	return f.Store.ActivityList(ctx, fl)
}
