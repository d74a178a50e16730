package strictjson

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/switchboardhq/switchboard"
)

// CaseExact refuses a member of raw whose name matches one of the members
// that v's type declares (through its json tags, at any depth of structs
// and slices) only when letter case is ignored: "THREADID" where the
// protocol says "threadId". Open protocol documents (AG-UI's
// RunAgentInput, the AI SDK's chat request) are decoded by readers that
// fold case and keep members they do not know, so without this a lone
// case variant would be read as the real member. Members v does not
// declare, and free-form values (maps, json.RawMessage, any), are not
// looked into. Run Envelope first; raw that does not fit v's shape is left
// for the decoder to report.
func CaseExact(raw []byte, v any) error {
	return caseExact(raw, reflect.TypeOf(v), "")
}

var rawMessageType = reflect.TypeFor[jsontext.Value]()

func caseExact(raw []byte, t reflect.Type, ptr string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var members map[string]jsontext.Value
		if json.Unmarshal(raw, &members) != nil {
			return nil
		}
		fields := memberFields(t)
		for name, val := range members {
			if f, ok := fields[name]; ok {
				if err := caseExact(val, f, ptr+"/"+escape(name)); err != nil {
					return err
				}
				continue
			}
			for want := range fields {
				if strings.EqualFold(name, want) {
					return switchboard.Errorf(switchboard.CodeInvalidInput,
						"request body has the member %q at %s; the protocol's name is %q (names are case-sensitive)", name, where(ptr), want).
						WithDetails(map[string]any{"pointer": ptr + "/" + escape(name)})
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 || t == rawMessageType {
			return nil // bytes or a raw value: free-form
		}
		var items []jsontext.Value
		if json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for i, it := range items {
			if err := caseExact(it, t.Elem(), ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// memberFields maps the JSON member names a struct declares to their types.
func memberFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// escape makes name a JSON pointer segment. The Replacer is built once: it
// costs microseconds to build, and this runs for every member checked.
func escape(name string) string {
	if !strings.ContainsAny(name, "~/") {
		return name
	}
	return pointerEscaper.Replace(name)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
