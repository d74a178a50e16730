package sqladapter

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// Mutate applies one change and returns the record as stored (nil for a
// delete). An update or delete that finds no record (in scope) is
// NOT_FOUND. Subscribers are notified after every success.
func (a *Adapter) Mutate(ctx context.Context, scope panelspec.AdapterScope, m panelspec.Mutation) (panelspec.Record, error) {
	var (
		rec panelspec.Record
		err error
	)
	switch m.Op {
	case panelspec.OpCreate:
		rec, err = a.create(ctx, scope, m.Values)
	case panelspec.OpUpdate:
		rec, err = a.update(ctx, scope, m.Key, m.Values)
	case panelspec.OpDelete:
		err = a.delete(ctx, scope, m.Key)
	default:
		err = switchboard.Errorf(switchboard.CodeInvalidInput, "op %q is not create, update or delete", m.Op)
	}
	if err != nil {
		return nil, err
	}
	a.notify()
	return rec, nil
}

// values checks and orders the columns a write sets.
func (a *Adapter) values(vals panelspec.Record) ([]string, error) {
	if len(vals) == 0 {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "no values to write; columns: %s", strings.Join(a.t.Writable, ", "))
	}
	cols := make([]string, 0, len(vals))
	for c, v := range vals {
		if !a.writable[c] {
			return nil, a.unknownColumn(c, a.t.Writable)
		}
		switch v.(type) {
		case nil, string, float64, bool, int, int64:
		default:
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "values.%s: a column takes a string, number, boolean or null", c)
		}
		cols = append(cols, c)
	}
	slices.Sort(cols)
	return cols, nil
}

func (a *Adapter) create(ctx context.Context, scope panelspec.AdapterScope, vals panelspec.Record) (panelspec.Record, error) {
	cols, err := a.values(vals)
	if err != nil {
		return nil, err
	}
	sb := &sqlBuilder{dialect: a.dialect}
	names := make([]string, 0, len(cols)+1)
	for _, c := range cols {
		names = append(names, q(c))
	}
	var scopeVal any
	if a.t.ScopeColumn != "" {
		if scopeVal, err = a.t.ScopeValue(scope); err != nil {
			return nil, err
		}
		names = append(names, q(a.t.ScopeColumn))
	}
	sb.w("INSERT INTO ", q(a.t.Name), " (", strings.Join(names, ", "), ") VALUES (")
	for i, c := range cols {
		if i > 0 {
			sb.w(", ")
		}
		sb.arg(toSQL(vals[c]))
	}
	if a.t.ScopeColumn != "" {
		sb.w(", ")
		sb.arg(scopeVal)
	}
	sb.w(") RETURNING ", a.columnList())
	return a.one(ctx, "insert", sb, nil)
}

func (a *Adapter) update(ctx context.Context, scope panelspec.AdapterScope, key any, vals panelspec.Record) (panelspec.Record, error) {
	if key == nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "update needs the record's key (%s)", a.t.Key)
	}
	cols, err := a.values(vals)
	if err != nil {
		return nil, err
	}
	sb := &sqlBuilder{dialect: a.dialect}
	sb.w("UPDATE ", q(a.t.Name), " SET ")
	for i, c := range cols {
		if i > 0 {
			sb.w(", ")
		}
		sb.w(q(c), " = ")
		sb.arg(toSQL(vals[c]))
	}
	sb.w(" WHERE ", q(a.t.Key), " = ")
	sb.arg(toSQL(key))
	if err := a.scopeCond(sb, scope, false); err != nil {
		return nil, err
	}
	sb.w(" RETURNING ", a.columnList())
	return a.one(ctx, "update", sb, key)
}

func (a *Adapter) delete(ctx context.Context, scope panelspec.AdapterScope, key any) error {
	if key == nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "delete needs the record's key (%s)", a.t.Key)
	}
	sb := &sqlBuilder{dialect: a.dialect}
	sb.w("DELETE FROM ", q(a.t.Name), " WHERE ", q(a.t.Key), " = ")
	sb.arg(toSQL(key))
	if err := a.scopeCond(sb, scope, false); err != nil {
		return err
	}
	sb.w(" RETURNING ", q(a.t.Key))
	_, err := a.one(ctx, "delete", sb, key)
	return err
}

// one runs a statement returning at most one row.
func (a *Adapter) one(ctx context.Context, op string, sb *sqlBuilder, key any) (panelspec.Record, error) {
	rows, err := a.db.QueryContext(ctx, sb.b.String(), sb.args...)
	if err != nil {
		return nil, dbError(ctx, op, err)
	}
	recs, err := scanRows(ctx, rows)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, switchboard.Errorf(switchboard.CodeNotFound, "%s has no record with %s %v", a.t.Name, a.t.Key, key)
	}
	return recs[0], nil
}

// Subscribe calls fn after every successful Mutate through this adapter
// until ctx ends. It does not narrow by query or scope: a change anywhere
// in the table reloads the panels showing it, which is cheap at panel
// sizes and never misses one.
func (a *Adapter) Subscribe(ctx context.Context, scope panelspec.AdapterScope, query json.RawMessage, fn func()) error {
	if _, err := a.parseQuery(query); err != nil {
		return err
	}
	a.mu.Lock()
	id := a.next
	a.next++
	a.subs[id] = sub{ctx: ctx, fn: fn}
	a.mu.Unlock()
	context.AfterFunc(ctx, func() {
		a.mu.Lock()
		delete(a.subs, id)
		a.mu.Unlock()
	})
	return nil
}

func (a *Adapter) notify() {
	a.mu.Lock()
	subs := make([]sub, 0, len(a.subs))
	for _, s := range a.subs {
		subs = append(subs, s)
	}
	a.mu.Unlock()
	for _, s := range subs {
		if s.ctx.Err() == nil { // a cancelled subscription is never called, even before it is removed
			s.fn()
		}
	}
}

type sub struct {
	ctx context.Context
	fn  func()
}

// Subscribers reports how many subscriptions are live (for tests and
// consoles).
func (a *Adapter) Subscribers() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.subs)
}
