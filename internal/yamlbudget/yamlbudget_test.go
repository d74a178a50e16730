package yamlbudget_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/yamlbudget"
)

// bomb: each level aliases the level below four times (as a list, or as a
// mapping), levels deep.
func bomb(levels int, mapping bool) string {
	var b strings.Builder
	b.WriteString("l0: &l0 lollollollollollollollollollollollol\n")
	for i := 1; i <= levels; i++ {
		p := fmt.Sprintf("*l%d", i-1)
		if mapping {
			fmt.Fprintf(&b, "l%d: &l%d {a: %s, b: %s, c: %s, d: %s}\n", i, i, p, p, p, p)
		} else {
			fmt.Fprintf(&b, "l%d: &l%d [%s, %s, %s, %s]\n", i, i, p, p, p, p)
		}
	}
	return b.String()
}

func TestDecodeBudgets(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		doc    string
		budget yamlbudget.Budget
		code   switchboard.Code
		want   string
	}{
		{"list aliases", bomb(11, false), yamlbudget.Budget{}, switchboard.CodePayloadTooLarge, "nodes once its aliases"},
		{"mapping aliases", bomb(12, true), yamlbudget.Budget{}, switchboard.CodePayloadTooLarge, "nodes once its aliases"},
		{"expanded bytes", "a: &a " + strings.Repeat("x", 1000) + "\nb: [*a, *a, *a, *a]\n", yamlbudget.Budget{ExpandedBytes: 4000}, switchboard.CodePayloadTooLarge, "bytes of values"},
		{"bytes", strings.Repeat("#", 101), yamlbudget.Budget{Bytes: 100}, switchboard.CodePayloadTooLarge, "the limit is 100"},
		{"depth", strings.Repeat("[", 40) + strings.Repeat("]", 40), yamlbudget.Budget{Depth: 32}, switchboard.CodeInvalidInput, "deeper than 32"},
		{"self alias", "a: &a [*a]\n", yamlbudget.Budget{}, switchboard.CodeInvalidInput, "deeper than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := yamlbudget.Decode(context.Background(), []byte(tc.doc), tc.budget)
			if got := switchboard.CodeOf(err); got != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode = %v (%s), want %s mentioning %q", err, got, tc.code, tc.want)
			}
		})
	}
}

// TestDecodeWithinBudget: a document that fits decodes as yaml.Unmarshal
// would, aliases and merge keys included.
func TestDecodeWithinBudget(t *testing.T) {
	t.Parallel()
	got, err := yamlbudget.Decode(context.Background(), []byte("base: &b {x: 1}\nuse: {<<: *b, y: [*b]}\n"), yamlbudget.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"base": map[string]any{"x": 1}, "use": map[string]any{"x": 1, "y": []any{map[string]any{"x": 1}}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("Decode (-want +got):\n%s", d)
	}
}

func TestDecodeSyntaxErrorHasPosition(t *testing.T) {
	t.Parallel()
	_, err := yamlbudget.Decode(context.Background(), []byte("a: 1\n\tb: 2\n"), yamlbudget.Budget{})
	var se *yamlbudget.SyntaxError
	if !errors.As(err, &se) || se.Line != 2 {
		t.Fatalf("Decode = %#v, want a SyntaxError on line 2", err)
	}
}

// TestDecodeDeadline: a deadline already passed stops the decode with
// INVALID_INPUT (no timing involved).
func TestDecodeDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel()
	_, err := yamlbudget.Decode(ctx, []byte("a: 1\n"), yamlbudget.Budget{})
	if switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), "time budget") {
		t.Fatalf("Decode = %v, want INVALID_INPUT about the time budget", err)
	}
}

// FuzzDecode: any input decodes, is a SyntaxError, or is refused with a
// frozen code; nothing panics, and a small budget holds for every input.
// The seeds include the bombs, so plain `go test` runs them.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(bomb(11, false)))
	f.Add([]byte(bomb(12, true)))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("base: &b {x: 1}\nuse: {<<: *b}\n"))
	f.Add([]byte(`{"json": [1, 2.5, "x", null, true]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := yamlbudget.Decode(context.Background(), data, yamlbudget.Budget{Nodes: 10_000, Depth: 64})
		var se *yamlbudget.SyntaxError
		if err == nil || errors.As(err, &se) {
			return
		}
		if c := switchboard.CodeOf(err); c != switchboard.CodePayloadTooLarge && c != switchboard.CodeInvalidInput {
			t.Fatalf("code %s: %v", c, err)
		}
	})
}
