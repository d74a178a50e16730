// Package manifest reads manifest files: YAML or JSON documents declaring
// tools with their bindings, and the app's host panels and data adapters,
// in the shape of switchboard.Manifest (or a bare array of tools). `switchboard tools register FILE` and `switchboard serve
// --manifest FILE` both read files through it, so both accept the same
// documents and report the same errors.
package manifest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/yamlbudget"
)

// MaxFileBytes bounds a manifest file.
const MaxFileBytes = 32 << 20

// Load reads and parses the manifest file at path.
func Load(path string) (switchboard.Manifest, error) {
	st, err := os.Stat(path)
	if err != nil {
		return switchboard.Manifest{}, switchboard.Errorf(switchboard.CodeInvalidInput, "read manifest: %v", err)
	}
	if st.Size() > MaxFileBytes {
		return switchboard.Manifest{}, switchboard.Errorf(switchboard.CodePayloadTooLarge, "manifest %s is %d bytes; the limit is %d", path, st.Size(), MaxFileBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return switchboard.Manifest{}, switchboard.Errorf(switchboard.CodeInvalidInput, "read manifest: %v", err)
	}
	m, err := Parse(b, filepath.Ext(path))
	if err != nil {
		e := switchboard.AsError(err)
		return switchboard.Manifest{}, &switchboard.Error{Code: e.Code, Message: path + ": " + e.Message, Details: e.Details}
	}
	return m, nil
}

// Parse decodes a manifest. ext (".yaml", ".yml", ".json" or "") picks the
// syntax; with no extension, a document starting with { or [ is JSON.
// Unknown fields are errors, so a misspelt key is caught at once.
func Parse(b []byte, ext string) (switchboard.Manifest, error) {
	trimmed := bytes.TrimSpace(b)
	isJSON := strings.EqualFold(ext, ".json") ||
		(ext == "" && len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '['))
	if !isJSON {
		// The same budgeted decoder as OpenAPI imports: aliases are
		// followed under a budget, so an alias bomb is refused, not expanded.
		doc, err := yamlbudget.Decode(context.Background(), b, yamlbudget.Budget{Bytes: MaxFileBytes})
		if err != nil {
			var se *yamlbudget.SyntaxError
			switch {
			case !errors.As(err, &se):
				return switchboard.Manifest{}, err
			case se.Line > 0:
				return switchboard.Manifest{}, atPosition("not valid YAML", se.Line, se.Column, se.Message)
			}
			return switchboard.Manifest{}, switchboard.Errorf(switchboard.CodeInvalidInput, "not valid YAML: %v", err)
		}
		j, err := json.Marshal(normalize(doc))
		if err != nil {
			return switchboard.Manifest{}, switchboard.Errorf(switchboard.CodeInvalidInput, "YAML cannot be represented as JSON: %v", err)
		}
		trimmed = j
	}
	if isJSON {
		if err := jsonSyntax(b); err != nil {
			return switchboard.Manifest{}, err
		}
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var tools []switchboard.Tool
		if err := strict(trimmed, &tools); err != nil {
			return switchboard.Manifest{}, withPosition(err, b, &tools)
		}
		return switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion, Tools: tools}, nil
	}
	var m switchboard.Manifest
	if err := strict(trimmed, &m); err != nil {
		return switchboard.Manifest{}, withPosition(err, b, &m)
	}
	if len(m.Tools)+len(m.Panels)+len(m.Adapters) == 0 {
		return switchboard.Manifest{}, switchboard.Errorf(switchboard.CodeInvalidInput, "manifest declares no tools (expected a \"tools\" list, or \"panels\" and \"adapters\")")
	}
	if m.ProtocolVersion == "" {
		m.ProtocolVersion = switchboard.ProtocolVersion
	}
	return m, nil
}

// jsonSyntax reports the first syntax error of a JSON document with its
// line and column (json.SyntaxError has only a byte offset).
func jsonSyntax(b []byte) error {
	var v any
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return nil // valid, or an error strict reports
	}
	line, col := position(b, se.Offset)
	return atPosition("not valid JSON", line, col, se.Error())
}

// position turns a byte offset into a 1-based line and column (in bytes).
// A syntax error's offset is just past the offending byte.
func position(b []byte, off int64) (line, col int) {
	off = max(0, min(off, int64(len(b))))
	if off > 0 {
		off-- // point at the offending byte itself
	}
	before := b[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// atPosition is a syntax error at line:col, which its details also carry.
func atPosition(what string, line, col int, msg string) error {
	return switchboard.Errorf(switchboard.CodeInvalidInput, "%s at line %d, column %d: %s", what, line, col, msg).
		WithDetails(map[string]int{"line": line, "column": col})
}

// withPosition replaces a decoder's "unknown field" error, which has no
// position, with one that has the line, the field's path and a suggestion.
func withPosition(err error, doc []byte, v any) error {
	if !strings.Contains(err.Error(), "unknown field") {
		return err
	}
	if e := unknownKey(doc, v); e != nil {
		return e
	}
	return err
}

func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// normalize turns YAML's map[any]any (from non-string keys) into JSON
// objects so the document can be re-encoded.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}
