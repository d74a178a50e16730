package sqlstore

import (
	"encoding/json"
	"testing"
	"time"
)

func TestNumbered(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`WHERE id = ?`, `WHERE id = $1`},
		{`VALUES (?, ?, ?) LIMIT ?`, `VALUES ($1, $2, $3) LIMIT $4`},
		{`IN (?` + ", ?" + `)`, `IN ($1, $2)`},
	} {
		if got := Numbered(c.in); got != c.want {
			t.Errorf("Numbered(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestTimeCol: both drivers' encodings scan to the same UTC time.
func TestTimeCol(t *testing.T) {
	want := time.Date(2026, 12, 1, 12, 0, 0, 123456000, time.UTC)
	local := want.In(time.FixedZone("x", 3600))
	for _, src := range []any{want.UnixMicro(), local} {
		var got time.Time
		if err := scanTime(&got).Scan(src); err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("Scan(%T) = %v, %v; want %v in UTC", src, got, err, want)
		}
	}
	got := want
	if err := scanTime(&got).Scan(nil); err != nil || !got.IsZero() {
		t.Errorf("Scan(nil) = %v, %v; want the zero time", got, err)
	}
	if err := scanTime(&got).Scan("2026-12-01"); err == nil {
		t.Error("Scan(string) succeeded")
	}
}

// TestJSONCol: a document comes back byte for byte and owns its bytes.
func TestJSONCol(t *testing.T) {
	doc := `{"b": 1,  "a": [2]}`
	buf := []byte(doc)
	var got json.RawMessage
	if err := scanJSON(&got).Scan(buf); err != nil || string(got) != doc {
		t.Fatalf("Scan([]byte) = %s, %v", got, err)
	}
	buf[0] = 'x' // the driver reuses its buffer
	if string(got) != doc {
		t.Fatalf("scanned JSON shares the driver's buffer: %s", got)
	}
	if err := scanJSON(&got).Scan(doc); err != nil || string(got) != doc {
		t.Fatalf("Scan(string) = %s, %v", got, err)
	}
	if err := scanJSON(&got).Scan(nil); err != nil || got != nil {
		t.Fatalf("Scan(nil) = %s, %v; want nil", got, err)
	}
}
