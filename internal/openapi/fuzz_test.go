package openapi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboardhq/switchboard/internal/openapi"
)

// FuzzImport feeds arbitrary documents to Import: it may refuse them, but
// must not panic or hang. The seeds are the small documents; minimizing
// an input as large as petstore3.yaml takes minutes, so run with
// -fuzzminimizetime 5s for a useful rate:
//
//	go test ./openapi -run '^$' -fuzz FuzzImport -fuzztime 60s -fuzzminimizetime 5s
func FuzzImport(f *testing.F) {
	for _, name := range []string{"petstore-expanded.yaml", "uspto.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "openapi", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(recursive))
	f.Add([]byte(swagger2))
	// Issue 26's expansion bombs: plain `go test` runs every seed, so the
	// budgets are exercised on each run, not only when fuzzing.
	f.Add([]byte(laughs()))
	f.Add([]byte(fanOut(14, false)))
	f.Add([]byte(fanOut(14, true)))
	f.Fuzz(func(t *testing.T, doc []byte) {
		// A small schema budget keeps each run quick; the budget itself is
		// what is under test for the bombs.
		_, _ = openapi.Import(context.Background(), doc, openapi.Options{BaseURL: "http://127.0.0.1:1", MaxSchemaNodes: 20_000})
	})
}
