package broker

import (
	"context"
	"encoding/json"

	"github.com/switchboardhq/switchboard"
)

// Func serves a Go-function tool in the process that embeds switchboard.
// input is the validated JSON object of arguments. The result is encoded
// as JSON (a json.RawMessage is used as it is). Return a *switchboard.Error
// to choose the code the caller sees (e.g. NOT_FOUND); any other error is
// reported as UPSTREAM_ERROR with its message.
type Func func(ctx context.Context, input json.RawMessage) (any, error)

// Handle registers fn as the executor of the tool named name in this
// process, replacing any earlier one. The tool itself is declared in the
// registry with Binding{Go: true}; daemon.RegisterFunc does both.
func (b *Broker) Handle(name string, fn Func) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if fn == nil {
		delete(b.funcs, name)
		return
	}
	b.funcs[name] = fn
}

// Typed adapts a handler with typed input and output to a Func: the input
// object is decoded into In (after schema validation, so decoding fails
// only when In and the schema disagree) and Out is encoded as the result.
func Typed[In, Out any](fn func(ctx context.Context, in In) (Out, error)) Func {
	return func(ctx context.Context, input json.RawMessage) (any, error) {
		var in In
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "decode input: %v", err)
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}
