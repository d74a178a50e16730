package daemon

import (
	"context"
	"encoding/json"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
)

// RegisterFunc declares tool in the catalog (source host) as a Go-function
// tool and serves its calls with fn in this process. tool.Binding is set to
// {go: true}; everything else about the tool (name, description, class,
// schemas, limits) is checked as for any registration. Calls reach fn
// through the broker like every other call: validated, recorded, limited
// and written to the ledger.
//
// fn receives the validated input object and returns any JSON-encodable
// result; return a *switchboard.Error to choose the code the caller sees.
func (d *Daemon) RegisterFunc(ctx context.Context, tool switchboard.Tool, fn func(ctx context.Context, input json.RawMessage) (any, error)) error {
	if fn == nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: RegisterFunc needs a function", tool.Name)
	}
	tool.Binding = &switchboard.Binding{Go: true}
	// The function goes in first so that a call racing the registration
	// finds it; a failed registration takes it out again.
	d.Broker.Handle(tool.Name, fn)
	if _, err := d.Registry.Register(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
		d.Broker.Handle(tool.Name, nil)
		return err
	}
	return nil
}

// Func adapts a handler with typed input and output for RegisterFunc: the
// validated input object is decoded into In and Out is the result.
//
//	d.RegisterFunc(ctx, tool, daemon.Func(func(ctx context.Context, in CreateTask) (Task, error) { ... }))
func Func[In, Out any](fn func(ctx context.Context, in In) (Out, error)) func(context.Context, json.RawMessage) (any, error) {
	return broker.Typed(fn)
}
