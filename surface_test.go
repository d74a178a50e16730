package switchboard_test

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The public packages, each a deliberate choice: a promise to embedders
// and client authors (docs/architecture.md, "Public and internal"). The
// engine lives under internal/. A new package outside internal/ fails
// TestPublicPackages until it is placed here on purpose.
var apiPackages = []string{".", "agui", "assertion", "client", "daemon", "panelspec", "postgres", "sqlite"}

// notLibrary are trees of programs, tests and examples, not importable API.
var notLibrary = []string{"internal", "cmd", "e2e", "bench", "deploy", "examples", "scripts", "docs", "testdata"}

func TestPublicPackages(t *testing.T) {
	found := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" ||
			d.Name() == "testdata" || slices.Contains(notLibrary, path)) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			found[filepath.ToSlash(filepath.Dir(path))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	known := apiPackages
	for dir := range found {
		if !slices.Contains(known, dir) {
			t.Errorf("package %s is public: move it under internal/, or add it to apiPackages (a promise to embedders) in surface_test.go", dir)
		}
	}
	for _, dir := range known {
		if !found[dir] {
			t.Errorf("package %s is listed as public but is gone (moved under internal/?): drop it from surface_test.go", dir)
		}
	}
}
