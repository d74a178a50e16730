package postgres

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
)

// stamp binds t as timestamptz, NULL for the zero time. Postgres keeps
// microseconds, as the sqlite driver does.
func stamp(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Truncate(time.Microsecond).UTC()
}

// fromStamp reverses stamp, always in UTC.
func fromStamp(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// normTime is t as the store will return it.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Truncate(time.Microsecond).UTC()
}

// ceilMicro is the first microsecond not before t, so Since stays exact
// when it carries nanoseconds.
func ceilMicro(t time.Time) time.Time {
	c := t.Truncate(time.Microsecond)
	if c.Before(t) {
		c = c.Add(time.Microsecond)
	}
	return c.UTC()
}

// rawJSON binds a JSON document to a json column, byte for byte; empty is
// NULL. Validating here makes bad JSON INVALID_INPUT on both drivers.
func rawJSON(field string, raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s is not valid JSON", field)
	}
	return string(raw), nil
}

// fromRawJSON reverses rawJSON (json columns are scanned into []byte,
// which pgx copies verbatim).
func fromRawJSON(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
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

func decodeError(b []byte) (*switchboard.Error, error) {
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
