package manifest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/editdist"
)

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// unknownKey finds, in the document b, the first key that the type of v
// has no field for, and returns an error naming its line and column, its
// dotted path and the keys that key most likely meant: the same help the
// config file's loader gives. It returns nil when b cannot be read as a
// node tree or no such key is found, and the caller keeps the decoder's
// own message. JSON is YAML here, so both syntaxes get positions.
func unknownKey(b []byte, v any) error {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	return walkKeys(doc.Content[0], reflect.TypeOf(v).Elem(), "")
}

func walkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil // decodes itself (header values, raw schemas)
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields, names := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				msg := fmt.Sprintf("unknown field %q at line %d, column %d", join(path, k.Value), k.Line, k.Column)
				if s := editdist.Suggest(k.Value, names); len(s) > 0 {
					msg += "; did you mean " + editdist.OrList(s) + "?"
				} else {
					msg += " (" + orTop(path) + " takes " + strings.Join(names, ", ") + ")"
				}
				return switchboard.Errorf(switchboard.CodeInvalidInput, "%s", msg).
					WithDetails(map[string]any{"line": k.Line, "column": k.Column, "field": join(path, k.Value)})
			}
			if err := walkKeys(val, ft, join(path, k.Value)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := walkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, e := range n.Content {
			if err := walkKeys(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields maps the JSON keys of struct t to their field types, and lists
// the keys in declaration order.
func jsonFields(t reflect.Type) (map[string]reflect.Type, []string) {
	fields := map[string]reflect.Type{}
	var names []string
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
		names = append(names, name)
	}
	return fields, names
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orTop(path string) string {
	if path == "" {
		return "the manifest"
	}
	return path
}
