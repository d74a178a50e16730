package openapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/openapi"
)

// laughs is the YAML billion laughs of the reported attack: each anchor is a list
// aliasing the level below four times, eleven levels deep (4^11 copies of
// the bottom string once decoded).
func laughs() string {
	var b strings.Builder
	b.WriteString("openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths: {}\n")
	b.WriteString("x-l0: &l0 [\"lollollollollollollollollollollollol\"]\n")
	for i := 1; i <= 11; i++ {
		fmt.Fprintf(&b, "x-l%d: &l%d [*l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1)
	}
	return b.String()
}

// fanOut is a request body whose schema refers to the next level four
// times (as properties, or as allOf parts), over levels levels: a few KB
// that inline to 4^levels nodes.
func fanOut(levels int, allOf bool) string {
	var b strings.Builder
	b.WriteString(`openapi: 3.0.0
info: {title: x, version: '1'}
paths:
  /x:
    post:
      operationId: x
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/S0'}
      responses: {'200': {description: ok}}
components:
  schemas:
`)
	for i := range levels {
		n := fmt.Sprintf("{$ref: '#/components/schemas/S%d'}", i+1)
		if allOf {
			fmt.Fprintf(&b, "    S%d: {allOf: [%s, %s, %s, %s]}\n", i, n, n, n, n)
		} else {
			fmt.Fprintf(&b, "    S%d: {type: object, properties: {a: %s, b: %s, c: %s, d: %s}}\n", i, n, n, n, n)
		}
	}
	fmt.Fprintf(&b, "    S%d: {type: object, properties: {z: {type: string}}}\n", levels)
	return b.String()
}

// TestImportBudgets: the reported expansion bombs are refused with a
// frozen code and a message naming the budget, in bounded memory, instead
// of growing until the kernel kills the process.
func TestImportBudgets(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc string
		code      switchboard.Code
		want      string
	}{
		{"yaml aliases", laughs(), switchboard.CodePayloadTooLarge, "aliases"},
		{"ref fan-out", fanOut(14, false), switchboard.CodePayloadTooLarge, "$refs are inlined"},
		{"allOf chain", fanOut(14, true), switchboard.CodePayloadTooLarge, "$refs are inlined"},
		{"too deep", "openapi: 3.0.0\nx: " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "\n", switchboard.CodeInvalidInput, "deeper than"},
		{"too many bytes", "openapi: 3.0.0\nx: '" + strings.Repeat("a", 2<<20) + "'\n", switchboard.CodePayloadTooLarge, "bytes; the limit is"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A small schema budget and a generous deadline: the budget,
			// not the machine's speed, decides where the import stops.
			opts := openapi.Options{BaseURL: "http://127.0.0.1:1", MaxSchemaNodes: 20_000, Timeout: time.Hour}
			opts.Document.Bytes = 1 << 20
			_, err := openapi.Import(context.Background(), []byte(tc.doc), opts)
			if got := switchboard.CodeOf(err); got != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Import = %v (%s), want %s mentioning %q", err, got, tc.code, tc.want)
			}
		})
	}
}

// TestImportBudgetFits: a fan-out small enough to fit imports, inlined.
func TestImportBudgetFits(t *testing.T) {
	t.Parallel()
	res, err := openapi.Import(context.Background(), []byte(fanOut(4, false)), openapi.Options{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || !strings.Contains(string(res.Tools[0].InputSchema), `"z"`) {
		t.Fatalf("tools = %+v, want one tool with the bottom level inlined", res.Tools)
	}
}

// TestImportTimeBudget: an import past its deadline stops with
// INVALID_INPUT, not a hang. The deadline has passed before the call, so
// the test does not depend on the machine's speed.
func TestImportTimeBudget(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel()
	_, err := openapi.Import(ctx, []byte(fanOut(4, false)), openapi.Options{BaseURL: "http://127.0.0.1:1"})
	if got := switchboard.CodeOf(err); got != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), "time budget") {
		t.Fatalf("Import = %v (%s), want INVALID_INPUT about the time budget", err, got)
	}
}
