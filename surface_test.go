package switchboard_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	pathpkg "path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The public packages, each a deliberate choice: a promise to embedders
// and client authors (docs/architecture.md, "Public and internal"). The
// engine lives under internal/. A new package outside internal/ fails
// TestPublicPackages until it is placed here on purpose.
var apiPackages = []string{".", "agui", "assertion", "client", "daemon", "panelspec", "panelspec/sqladapter", "postgres", "sqlite"}

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

// TestPublicAPINamesNoInternalType fails when an exported declaration of a
// public package (a type, a field, a method or function signature, a
// variable with its value, a constant's type) names an identifier of an
// internal package: an embedder could not name that type, and go doc would
// show the engine instead of the API. The check reads each package's exported
// declarations (go/doc) and every qualified identifier in them.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	for _, dir := range apiPackages {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			// Which names of each file import an internal package.
			internalName := map[*ast.File]map[string]string{}
			for _, f := range pkg.Files {
				m := map[string]string{}
				for _, imp := range f.Imports {
					path, _ := strconv.Unquote(imp.Path.Value)
					if !strings.Contains("/"+path+"/", "/internal/") {
						continue
					}
					name := pathpkg.Base(path)
					if imp.Name != nil {
						name = imp.Name.Name
					}
					m[name] = path
				}
				internalName[f] = m
			}
			fileOf := func(n ast.Node) *ast.File {
				for _, f := range pkg.Files {
					if f.Pos() <= n.Pos() && n.End() <= f.End() {
						return f
					}
				}
				return nil
			}
			check := func(what string, n ast.Node) {
				if n == nil || reflect.ValueOf(n).IsNil() {
					return
				}
				names := internalName[fileOf(n)]
				ast.Inspect(n, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if x, ok := sel.X.(*ast.Ident); ok && names[x.Name] != "" {
						t.Errorf("%s: %s names %s.%s (%s): public API must not name an internal package's type or value",
							fset.Position(sel.Pos()), what, x.Name, sel.Sel.Name, names[x.Name])
					}
					return true
				})
			}
			// go/doc keeps the exported declarations only (unexported
			// fields and methods are filtered out of the AST it returns).
			d := doc.New(pkg, dir, 0)
			// A variable's value is checked whole (its type may come from
			// it); a constant may take its value from an internal constant
			// (one home for the number), but not its declared type.
			vars := func(vs []*doc.Value) {
				for _, v := range vs {
					check(strings.Join(v.Names, ", "), v.Decl)
				}
			}
			consts := func(vs []*doc.Value) {
				for _, v := range vs {
					for _, spec := range v.Decl.Specs {
						check(strings.Join(v.Names, ", "), spec.(*ast.ValueSpec).Type)
					}
				}
			}
			funcs := func(fs []*doc.Func) {
				for _, f := range fs {
					check(f.Name, f.Decl.Recv)
					check(f.Name, f.Decl.Type)
				}
			}
			consts(d.Consts)
			vars(d.Vars)
			funcs(d.Funcs)
			for _, typ := range d.Types {
				check(typ.Name, typ.Decl)
				consts(typ.Consts)
				vars(typ.Vars)
				funcs(typ.Funcs)
				funcs(typ.Methods)
			}
		}
	}
}
