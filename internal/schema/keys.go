package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// CheckKeys refuses JSON whose objects repeat a key, repeat it in another
// letter case, or carry a NUL in a key (RELIABILITY row 21). Go's decoder
// keeps the last of duplicate keys while a backend or a person reading an
// approval card may take the first: one document, two meanings.
func CheckKeys(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]string // lower-cased key → key as written
		expect bool              // the next token in an object is a key
		path   string
		last   string
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "value is not valid JSON: %v", err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if key, isKey := tok.(string); isKey && top != nil && top.object && top.expect {
			where := top.path + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
			if strings.ContainsRune(key, 0) {
				return keyError(where, "a key contains a NUL character")
			}
			lower := strings.ToLower(key)
			if prev, dup := top.keys[lower]; dup {
				if prev == key {
					return keyError(where, "the key appears twice in one object")
				}
				return keyError(where, "the key appears twice in one object, as "+prev+" and "+key)
			}
			top.keys[lower], top.expect, top.last = key, false, where
			continue
		}
		path := ""
		if top != nil {
			path = top.path
			if top.object {
				path, top.expect = top.last, true
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]string{}, expect: true, path: path})
		case json.Delim('['):
			stack = append(stack, &frame{path: path})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].expect = true
			}
		}
	}
}

func keyError(pointer, msg string) error {
	return switchboard.Errorf(switchboard.CodeInvalidInput, "at %s: %s; send each key once", pointer, msg).
		WithDetails(map[string]any{"pointer": pointer})
}
