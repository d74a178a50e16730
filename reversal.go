package switchboard

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Inverse declares how to undo a call of a tool: call Tool with an input
// built from the original call. Input maps each argument of the inverse to
// a JSON Pointer (RFC 6901) into the document {"input": <original input>,
// "result": <original result>}; e.g. {"id": "/result/id"} undoes a create
// by deleting what it created. Reversal runs the inverse as a fresh call
// through the broker, so scope, approval and the ledger apply to it as to
// any mutation.
type Inverse struct {
	Tool  string            `json:"tool"`
	Input map[string]string `json:"input,omitempty"`
}

// Build returns the inverse's input for an original call, or INVALID_INPUT
// naming the argument whose pointer resolves to nothing.
func (v *Inverse) Build(input, result json.RawMessage) (json.RawMessage, error) {
	doc := map[string]json.RawMessage{"input": orNull(input), "result": orNull(result)}
	out := make(map[string]json.RawMessage, len(v.Input))
	for arg, ptr := range v.Input {
		val, ok := pointer(doc, ptr)
		if !ok {
			return nil, Errorf(CodeInvalidInput, "the inverse of this call (%s) needs %q from %s, which the original call does not have", v.Tool, arg, ptr)
		}
		out[arg] = val
	}
	return json.Marshal(out)
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// pointer resolves a JSON Pointer whose first token is input or result.
func pointer(doc map[string]json.RawMessage, ptr string) (json.RawMessage, bool) {
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	toks := strings.Split(ptr[1:], "/")
	cur, ok := doc[unescapePointer(toks[0])]
	if !ok {
		return nil, false
	}
	for _, tok := range toks[1:] {
		tok = unescapePointer(tok)
		cur = bytes.TrimSpace(cur)
		switch {
		case len(cur) > 0 && cur[0] == '{':
			var m map[string]json.RawMessage
			if json.Unmarshal(cur, &m) != nil {
				return nil, false
			}
			if cur, ok = m[tok]; !ok {
				return nil, false
			}
		case len(cur) > 0 && cur[0] == '[':
			var a []json.RawMessage
			i, err := strconv.Atoi(tok)
			if json.Unmarshal(cur, &a) != nil || err != nil || i < 0 || i >= len(a) {
				return nil, false
			}
			cur = a[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
