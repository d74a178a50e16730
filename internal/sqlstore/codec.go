package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard"
)

// normTime is t as the store will return it: microseconds (what Postgres
// keeps, so both drivers round-trip alike), UTC.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Truncate(time.Microsecond).UTC()
}

// ceilMicro is the first microsecond not before t, so a Since filter stays
// exact when it carries nanoseconds.
func ceilMicro(t time.Time) time.Time {
	c := t.Truncate(time.Microsecond)
	if c.Before(t) {
		c = c.Add(time.Microsecond)
	}
	return c.UTC()
}

// timeCol scans a time column as either driver stores it: microseconds
// since the epoch (SQLite INTEGER) or a time (Postgres timestamptz); NULL
// is the zero time. Times come back in UTC.
type timeCol time.Time

func (c *timeCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c = timeCol{}
	case int64:
		*c = timeCol(time.UnixMicro(v).UTC())
	case time.Time:
		*c = timeCol(v.UTC())
	default:
		return fmt.Errorf("time column holds %T", src)
	}
	return nil
}

// scanTime is a Scan destination for a time column.
func scanTime(t *time.Time) *timeCol { return (*timeCol)(t) }

// jsonCol scans a JSON document kept as TEXT (SQLite) or json (Postgres),
// byte for byte; NULL is nil.
type jsonCol json.RawMessage

func (c *jsonCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c = nil
	case string:
		*c = jsonCol(v)
	case []byte:
		*c = jsonCol(bytes.Clone(v))
	default:
		return fmt.Errorf("JSON column holds %T", src)
	}
	return nil
}

// scanJSON is a Scan destination for a JSON column.
func scanJSON(raw *json.RawMessage) *jsonCol { return (*jsonCol)(raw) }

// rawJSON binds a JSON document as text, byte for byte; empty is NULL.
// Validating here makes bad JSON INVALID_INPUT on both drivers.
func rawJSON(field string, raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s is not valid JSON", field)
	}
	return string(raw), nil
}

// encodeError stores an error as its wire JSON; the cause is not
// persisted.
func encodeError(e *switchboard.Error) (any, error) {
	if e == nil {
		return nil, nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "error details do not encode: %w", err)
	}
	return string(b), nil
}

// decodeError reverses encodeError.
func decodeError(b json.RawMessage) (*switchboard.Error, error) {
	if b == nil {
		return nil, nil
	}
	var e switchboard.Error
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInternal, "stored error does not decode: %w", err)
	}
	return &e, nil
}

// encodeTool is the stored descriptor: t with the store's Version and
// Origin. HTML escaping is off so schemas keep <, > and & as written;
// encoding/json still compacts RawMessage fields (whitespace is not kept).
func encodeTool(t switchboard.Tool, source switchboard.Source, rev int64) (string, error) {
	t.Version = rev
	t.Origin = &switchboard.Origin{Source: source}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return "", switchboard.Errorf(switchboard.CodeInvalidInput, "tool %q does not encode: %w", t.Name, err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// decodeTool reverses encodeTool. A missing inputSchema was encoded as
// null; it reads back as nil, as it was put.
func decodeTool(desc []byte, source switchboard.Source, version int64) (switchboard.Tool, error) {
	var t switchboard.Tool
	if err := json.Unmarshal(desc, &t); err != nil {
		return t, switchboard.Errorf(switchboard.CodeInternal, "stored tool does not decode: %w", err)
	}
	if string(t.InputSchema) == "null" {
		t.InputSchema = nil
	}
	t.Version = version
	t.Origin = &switchboard.Origin{Source: source}
	return t, nil
}

// panelScope binds a token's panel scope as a JSON object.
func panelScope(ps switchboard.PanelScope) string {
	b, _ := json.Marshal(ps) // two string lists: cannot fail
	return string(b)
}

// sessionScope binds a session's scope as JSON text.
func sessionScope(sc switchboard.SessionScope) string {
	b, _ := json.Marshal(sc) // string lists: cannot fail
	return string(b)
}

// globList binds a list of tool-name globs as a JSON array.
func globList(g []string) string {
	if g == nil {
		g = []string{}
	}
	b, _ := json.Marshal(g) // []string: cannot fail
	return string(b)
}
