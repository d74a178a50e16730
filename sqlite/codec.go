package sqlite

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
)

// micros stores t as microseconds since the epoch, NULL for the zero time.
// Microseconds are what Postgres keeps, so both stores round-trip alike.
func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// fromMicros reverses micros, always in UTC.
func fromMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.Int64).UTC()
}

// normTime is t as the store will return it.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Truncate(time.Microsecond).UTC()
}

// rawJSON binds a JSON document as TEXT, byte for byte; empty is NULL.
func rawJSON(field string, raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s is not valid JSON", field)
	}
	return string(raw), nil
}

// fromRawJSON reverses rawJSON.
func fromRawJSON(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// encodeError stores an invocation error as its wire JSON; the cause is
// not persisted.
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

func decodeError(s sql.NullString) (*switchboard.Error, error) {
	if !s.Valid {
		return nil, nil
	}
	var e switchboard.Error
	if err := json.Unmarshal([]byte(s.String), &e); err != nil {
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
func decodeTool(desc string, source switchboard.Source, version int64) (switchboard.Tool, error) {
	var t switchboard.Tool
	if err := json.Unmarshal([]byte(desc), &t); err != nil {
		return t, switchboard.Errorf(switchboard.CodeInternal, "stored tool does not decode: %w", err)
	}
	if string(t.InputSchema) == "null" {
		t.InputSchema = nil
	}
	t.Version = version
	t.Origin = &switchboard.Origin{Source: source}
	return t, nil
}
