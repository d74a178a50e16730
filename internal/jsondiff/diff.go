// Package jsondiff computes RFC 6902 JSON Patches between two JSON
// documents: what AG-UI's STATE_DELTA carries when the workspace digest
// changes. github.com/evanphx/json-patch/v5 applies patches (the tests
// check every diff with it) but only creates RFC 7386 merge patches, which
// STATE_DELTA does not take.
//
// The diff is structural and small for the changes a digest sees: objects
// are compared key by key, arrays index by index over their common length
// with the tail added or removed, anything else is replaced.
package jsondiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Op is one RFC 6902 operation.
type Op struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Diff returns the operations that turn document a into document b, in
// order; none when they are equal.
func Diff(a, b []byte) ([]Op, error) {
	va, err := decode(a)
	if err != nil {
		return nil, fmt.Errorf("jsondiff: first document: %w", err)
	}
	vb, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("jsondiff: second document: %w", err)
	}
	var ops []Op
	diff(&ops, "", va, vb)
	return ops, nil
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers compare and travel as written
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func diff(ops *[]Op, path string, a, b any) {
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			diffObject(ops, path, x, y)
			return
		}
	case []any:
		if y, ok := b.([]any); ok {
			diffArray(ops, path, x, y)
			return
		}
	default:
		if equalScalar(a, b) {
			return
		}
	}
	*ops = append(*ops, Op{Op: "replace", Path: path, Value: raw(b)})
}

func diffObject(ops *[]Op, path string, a, b map[string]any) {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // a stable patch for the same change
	for _, k := range keys {
		p := path + "/" + escape(k)
		va, inA := a[k]
		vb, inB := b[k]
		switch {
		case inA && inB:
			diff(ops, p, va, vb)
		case inA:
			*ops = append(*ops, Op{Op: "remove", Path: p})
		default:
			*ops = append(*ops, Op{Op: "add", Path: p, Value: raw(vb)})
		}
	}
}

func diffArray(ops *[]Op, path string, a, b []any) {
	if keyed(a) && keyed(b) {
		diffKeyed(ops, path, a, b)
		return
	}
	n := min(len(a), len(b))
	for i := range n {
		diff(ops, path+"/"+strconv.Itoa(i), a[i], b[i])
	}
	// Removals from the end, so each index is still valid when applied.
	for i := len(a) - 1; i >= n; i-- {
		*ops = append(*ops, Op{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
	}
	for i := n; i < len(b); i++ {
		*ops = append(*ops, Op{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: raw(b[i])})
	}
}

// keyed reports whether every element is an object with a string "id":
// a list of records (contexts, panels, agents), diffed by id.
func keyed(xs []any) bool {
	for _, x := range xs {
		m, ok := x.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m["id"].(string); !ok {
			return false
		}
	}
	return len(xs) > 0
}

func idOf(x any) string { return x.(map[string]any)["id"].(string) }

// diffKeyed keeps the records common to the start and the end of both
// lists in place (diffing each), and removes and adds the middle: an item
// dropped from or added to a list costs one operation, not a shift of
// every item after it.
func diffKeyed(ops *[]Op, path string, a, b []any) {
	p := 0
	for p < len(a) && p < len(b) && idOf(a[p]) == idOf(b[p]) {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && idOf(a[len(a)-1-s]) == idOf(b[len(b)-1-s]) {
		s++
	}
	for i := range p {
		diff(ops, path+"/"+strconv.Itoa(i), a[i], b[i])
	}
	for i := len(a) - s - 1; i >= p; i-- {
		*ops = append(*ops, Op{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
	}
	for i := p; i < len(b)-s; i++ {
		*ops = append(*ops, Op{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: raw(b[i])})
	}
	for k := range s {
		diff(ops, path+"/"+strconv.Itoa(len(b)-s+k), a[len(a)-s+k], b[len(b)-s+k])
	}
}

func equalScalar(a, b any) bool {
	switch a.(type) {
	case nil:
		return b == nil
	case bool, string, json.Number:
		return a == b
	}
	return false
}

// escape encodes a key as an RFC 6901 reference token.
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
