// Package sqladapter is a panelspec.DataAdapter over one table of the app's
// own database, through database/sql: SQLite (modernc.org/sqlite) and
// Postgres (pgx's stdlib driver) alike. A host registers it with
// daemon.RegisterAdapter. Panels read the table through sources of kind
// adapter and change it only through the adapter's data tools
// (data.<name>.create|update|delete), which every call path governs.
//
// Queries are JSON, never SQL: {"where": {"status": "active", "id": ["a",
// "b"]}, "orderBy": "name", "desc": false, "limit": 50}. Column names are
// checked against the table's declared columns and every value is a bound
// parameter, so nothing an agent or a panel sends becomes SQL text.
//
// Every successful Mutate notifies the adapter's subscribers (in this
// process), so open panels showing the table refresh. Changes made to the
// table by other means, or by another process, are not seen until a panel
// reloads; Postgres LISTEN/NOTIFY could carry them (not built).
package sqladapter

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// Dialect is the SQL flavour of the database.
type Dialect int

const (
	SQLite Dialect = iota
	Postgres
)

// DefaultMaxRows bounds a query's records.
const DefaultMaxRows = 500

// Table describes the table an Adapter serves.
type Table struct {
	// Name is the SQL table.
	Name string
	// Key is the primary key column; update and delete find a record by it.
	Key string
	// Columns are the columns queries return and filter on (Key is added
	// when missing).
	Columns []string
	// Writable are the columns create and update may set (default: every
	// column but Key, so the database assigns keys).
	Writable []string
	// ScopeColumn, when set, restricts every query and write to the rows
	// whose column equals ScopeValue(scope) (a tenant or owner column);
	// create sets it.
	ScopeColumn string
	ScopeValue  func(panelspec.AdapterScope) (any, error)
	// MaxRows bounds a query (default 500).
	MaxRows int
}

// Adapter serves one table. Safe for concurrent use.
type Adapter struct {
	db       *sql.DB
	dialect  Dialect
	t        Table
	writable map[string]bool
	readable map[string]bool

	mu   sync.Mutex
	subs map[int]sub
	next int
}

var _ panelspec.DataAdapter = (*Adapter)(nil)

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// New returns an adapter over table t of db.
func New(db *sql.DB, dialect Dialect, t Table) (*Adapter, error) {
	if db == nil {
		return nil, errors.New("sqladapter: db is required")
	}
	if t.MaxRows <= 0 {
		t.MaxRows = DefaultMaxRows
	}
	if !slices.Contains(t.Columns, t.Key) {
		t.Columns = append([]string{t.Key}, t.Columns...)
	}
	if t.Writable == nil {
		for _, c := range t.Columns {
			if c != t.Key {
				t.Writable = append(t.Writable, c)
			}
		}
	}
	a := &Adapter{db: db, dialect: dialect, t: t, writable: map[string]bool{}, readable: map[string]bool{}, subs: map[int]sub{}}
	for _, name := range append([]string{t.Name, t.Key}, t.Columns...) {
		if !ident.MatchString(name) {
			return nil, fmt.Errorf("sqladapter: %q is not a plain SQL identifier", name)
		}
	}
	if t.ScopeColumn != "" && (!ident.MatchString(t.ScopeColumn) || t.ScopeValue == nil) {
		return nil, errors.New("sqladapter: ScopeColumn needs a plain identifier and ScopeValue")
	}
	for _, c := range t.Columns {
		a.readable[c] = true
	}
	for _, c := range t.Writable {
		if !a.readable[c] {
			return nil, fmt.Errorf("sqladapter: writable column %q is not among Columns", c)
		}
		a.writable[c] = true
	}
	return a, nil
}

// Query is the adapter's query document.
type Query struct {
	// Where maps a column to a value (equality), an array (IN) or null (IS
	// NULL); conditions are ANDed.
	Where   map[string]json.RawMessage `json:"where,omitempty"`
	OrderBy string                     `json:"orderBy,omitempty"`
	Desc    bool                       `json:"desc,omitempty"`
	Limit   int                        `json:"limit,omitempty"`
}

// QuerySchema is the JSON Schema of Query for this table, for the data
// tools' input schemas.
func (a *Adapter) QuerySchema() json.RawMessage {
	cols, _ := json.Marshal(a.t.Columns)
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"where":{"type":"object","propertyNames":{"enum":%s},"description":"column → value (equality), array (any of) or null"},`+
		`"orderBy":{"enum":%s},"desc":{"type":"boolean"},"limit":{"type":"integer","minimum":1,"maximum":%d}},"additionalProperties":false}`,
		cols, cols, a.t.MaxRows))
}

// RecordSchema is the JSON Schema of the values create and update take.
func (a *Adapter) RecordSchema() json.RawMessage {
	cols, _ := json.Marshal(a.t.Writable)
	return json.RawMessage(fmt.Sprintf(`{"type":"object","propertyNames":{"enum":%s},"minProperties":1}`, cols))
}

// sqlBuilder accumulates a statement and its arguments.
type sqlBuilder struct {
	dialect Dialect
	b       strings.Builder
	args    []any
}

func (s *sqlBuilder) w(parts ...string) {
	for _, p := range parts {
		s.b.WriteString(p)
	}
}

// arg appends a placeholder for v.
func (s *sqlBuilder) arg(v any) {
	s.args = append(s.args, v)
	if s.dialect == Postgres {
		s.b.WriteString("$" + strconv.Itoa(len(s.args)))
	} else {
		s.b.WriteString("?")
	}
}

func q(id string) string { return `"` + id + `"` }

func (a *Adapter) columnList() string {
	cols := make([]string, len(a.t.Columns))
	for i, c := range a.t.Columns {
		cols[i] = q(c)
	}
	return strings.Join(cols, ", ")
}

// scopeCond adds the scope restriction, if any.
func (a *Adapter) scopeCond(sb *sqlBuilder, scope panelspec.AdapterScope, first bool) error {
	if a.t.ScopeColumn == "" {
		return nil
	}
	v, err := a.t.ScopeValue(scope)
	if err != nil {
		return err
	}
	if first {
		sb.w(" WHERE ")
	} else {
		sb.w(" AND ")
	}
	sb.w(q(a.t.ScopeColumn), " = ")
	sb.arg(v)
	return nil
}

// Query returns the records query selects.
func (a *Adapter) Query(ctx context.Context, scope panelspec.AdapterScope, raw json.RawMessage) ([]panelspec.Record, error) {
	qd, err := a.parseQuery(raw)
	if err != nil {
		return nil, err
	}
	sb := &sqlBuilder{dialect: a.dialect}
	sb.w("SELECT ", a.columnList(), " FROM ", q(a.t.Name))
	cols := make([]string, 0, len(qd.Where))
	for c := range qd.Where {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	first := true
	for _, c := range cols {
		if first {
			sb.w(" WHERE ")
			first = false
		} else {
			sb.w(" AND ")
		}
		if err := a.condition(sb, c, qd.Where[c]); err != nil {
			return nil, err
		}
	}
	if err := a.scopeCond(sb, scope, first); err != nil {
		return nil, err
	}
	order := qd.OrderBy
	if order == "" {
		order = a.t.Key
	}
	sb.w(" ORDER BY ", q(order))
	if qd.Desc {
		sb.w(" DESC")
	}
	limit := qd.Limit
	if limit <= 0 || limit > a.t.MaxRows {
		limit = a.t.MaxRows
	}
	sb.w(" LIMIT ", strconv.Itoa(limit))
	rows, err := a.db.QueryContext(ctx, sb.b.String(), sb.args...)
	if err != nil {
		return nil, dbError(ctx, "query", err)
	}
	return scanRows(ctx, rows)
}

func (a *Adapter) parseQuery(raw json.RawMessage) (Query, error) {
	var qd Query
	if t := strings.TrimSpace(string(raw)); t != "" && t != "null" {
		dec := json.NewDecoder(strings.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&qd); err != nil {
			return Query{}, switchboard.Errorf(switchboard.CodeInvalidInput,
				`query of %s: %v; use {"where": {column: value}, "orderBy": column, "desc": bool, "limit": n}`, a.t.Name, err)
		}
	}
	for c := range qd.Where {
		if !a.readable[c] {
			return Query{}, a.unknownColumn(c, a.t.Columns)
		}
	}
	if qd.OrderBy != "" && !a.readable[qd.OrderBy] {
		return Query{}, a.unknownColumn(qd.OrderBy, a.t.Columns)
	}
	return qd, nil
}

func (a *Adapter) unknownColumn(c string, cols []string) error {
	return switchboard.Errorf(switchboard.CodeInvalidInput, "%s has no column %q here; columns: %s", a.t.Name, c, strings.Join(cols, ", "))
}

// condition renders one where entry.
func (a *Adapter) condition(sb *sqlBuilder, col string, raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "where.%s: %v", col, err)
	}
	switch x := v.(type) {
	case nil:
		sb.w(q(col), " IS NULL")
	case []any:
		if len(x) == 0 {
			sb.w("1 = 0")
			return nil
		}
		sb.w(q(col), " IN (")
		for i, e := range x {
			if i > 0 {
				sb.w(", ")
			}
			if err := scalar(col, e); err != nil {
				return err
			}
			sb.arg(toSQL(e))
		}
		sb.w(")")
	default:
		if err := scalar(col, v); err != nil {
			return err
		}
		sb.w(q(col), " = ")
		sb.arg(toSQL(v))
	}
	return nil
}

func scalar(col string, v any) error {
	switch v.(type) {
	case string, float64, bool:
		return nil
	}
	return switchboard.Errorf(switchboard.CodeInvalidInput, "where.%s: a value is a string, number or boolean", col)
}

// toSQL turns a decoded JSON value into a driver argument: integral
// numbers become int64 (Postgres integer columns refuse float64).
func toSQL(v any) any {
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return v
}

// scanRows reads rows into records: text as strings, booleans as booleans
// (SQLite keeps them as 0/1 in columns declared BOOLEAN), dates as
// YYYY-MM-DD and timestamps as RFC 3339.
func scanRows(ctx context.Context, rows *sql.Rows) ([]panelspec.Record, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, dbError(ctx, "query", err)
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, dbError(ctx, "query", err)
	}
	out := []panelspec.Record{}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, dbError(ctx, "query", err)
		}
		rec := make(panelspec.Record, len(cols))
		for i, c := range cols {
			rec[c] = fromSQL(vals[i], strings.ToUpper(types[i].DatabaseTypeName()))
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, "query", err)
	}
	return out, nil
}

func fromSQL(v any, typ string) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case time.Time:
		if typ == "DATE" {
			return x.Format(time.DateOnly)
		}
		return x.UTC().Format(time.RFC3339Nano)
	case int64:
		if typ == "BOOLEAN" || typ == "BOOL" {
			return x != 0
		}
	}
	return v
}

func dbError(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return switchboard.Errorf(switchboard.CodeCancelled, "%s: %v", op, ctx.Err())
	}
	return switchboard.Errorf(switchboard.CodeUpstreamError, "the database refused the %s: %v", op, err)
}
