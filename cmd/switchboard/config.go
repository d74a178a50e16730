package main

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"
)

// decodeConfig decodes the YAML config file b (named file) into cfg. Its
// errors speak the file's language: the file, line and column, and the key
// as written, dotted from the top (governance.approvalTTL), never the Go
// type the file is decoded into.
func decodeConfig(file string, b []byte, cfg any) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		var le *yaml.LoadError
		if errors.As(err, &le) && le.Mark.Line > 0 {
			return fmt.Errorf("config %s:%d:%d: not valid YAML: %s", file, le.Mark.Line, le.Mark.Column, le.Message)
		}
		return fmt.Errorf("config %s: not valid YAML: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind == 0 {
		return fmt.Errorf("config %s: the file is empty; write a YAML mapping such as 'addr: 127.0.0.1:7766'", file)
	}
	if err := checkNode(file, &doc, reflect.TypeOf(cfg).Elem(), ""); err != nil {
		return err
	}
	// What checkNode lets through decodes; should it not, the file's name
	// stays on the message.
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("config %s: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return nil
}

var (
	yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

// checkNode walks n against the type t it will decode into: a key t has no
// field for, or a value that does not decode into its field, is an error at
// that node, named by its dotted path.
func checkNode(file string, n *yaml.Node, t reflect.Type, path string) error {
	at := func(n *yaml.Node) string { return fmt.Sprintf("config %s:%d:%d", file, n.Line, n.Column) }
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return checkNode(file, n.Content[0], t, path)
	case yaml.AliasNode:
		return nil // checked where the anchor is
	}
	if n.Tag == "!!null" {
		return nil
	}
	pt := reflect.PointerTo(t)
	custom := pt.Implements(yamlUnmarshaler) || pt.Implements(textUnmarshaler)
	switch {
	case !custom && t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: %s must be a mapping of keys (%s), not %s", at(n), orTop(path), strings.Join(yamlKeys(t), ", "), describeNode(n))
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				msg := fmt.Sprintf("%s: unknown key %q", at(k), join(path, k.Value))
				if s := suggest(k.Value, yamlKeys(t)); len(s) > 0 {
					msg += "; did you mean " + orList(s) + "?"
				}
				return fmt.Errorf("%s (%s takes %s)", msg, orTop(path), strings.Join(yamlKeys(t), ", "))
			}
			if err := checkNode(file, v, ft, join(path, k.Value)); err != nil {
				return err
			}
		}
		return nil
	case !custom && t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: %s must be a mapping, not %s", at(n), orTop(path), describeNode(n))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkNode(file, n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
		return nil
	case !custom && t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: %s must be a list, not %s", at(n), orTop(path), describeNode(n))
		}
		for i, e := range n.Content {
			if err := checkNode(file, e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		// A field's own decoder (UnmarshalYAML) says what is wrong in the
		// file's terms; show its words after the position.
		var le *yaml.LoadError
		if custom && errors.As(err, &le) && le.Message != "" {
			return fmt.Errorf("%s: %s: %s", at(n), orTop(path), le.Message)
		}
		return fmt.Errorf("%s: %s must be %s, not %s", at(n), orTop(path), kindWord(t), describeNode(n))
	}
	return nil
}

// yamlFields maps each YAML key of struct t to its field's type.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		name, ok := yamlName(f)
		if ok && f.IsExported() {
			out[name] = f.Type
		}
	}
	return out
}

// yamlKeys lists the YAML keys of struct t in declaration order.
func yamlKeys(t reflect.Type) []string {
	var out []string
	for _, f := range reflect.VisibleFields(t) {
		if name, ok := yamlName(f); ok && f.IsExported() {
			out = append(out, name)
		}
	}
	return out
}

func yamlName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("yaml")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "-" || strings.Contains(opts, "inline") || f.Anonymous {
		return "", false
	}
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, true
}

// kindWord says what a value of t looks like in YAML.
func kindWord(t reflect.Type) string {
	if t == durationType {
		return "a duration such as 90s, 5m or 1h30m"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return "a valid value"
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orTop(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}
