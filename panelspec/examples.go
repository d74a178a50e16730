package panelspec

import (
	"embed"
	"encoding/json"
	"path"
	"strings"
)

//go:embed examples/*.json
var exampleFiles embed.FS

// Example is a curated spec that panel.describe shows agents. The tests
// validate every example, so they never drift from the catalog.
type Example struct {
	Name string          `json:"name"`
	Spec json.RawMessage `json:"spec"`
}

// Examples returns the curated example specs, sorted by name.
func Examples() []Example {
	files, err := exampleFiles.ReadDir("examples")
	if err != nil {
		panic(err) // embedded at build time
	}
	out := make([]Example, 0, len(files))
	for _, f := range files {
		raw, err := exampleFiles.ReadFile("examples/" + f.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, Example{Name: strings.TrimSuffix(f.Name(), path.Ext(f.Name())), Spec: raw})
	}
	return out
}
