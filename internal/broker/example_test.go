package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// A Go function served as a tool: declared in the registry with a Go
// binding, registered with the broker, and called through the one call
// path, which validates, records and writes the ledger.
func ExampleBroker_Call() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "switchboard-example")
	defer os.RemoveAll(dir)
	store, _ := sqlite.Open(ctx, filepath.Join(dir, "sb.db"), nil)
	defer store.Close()
	reg, _ := registry.New(ctx, store, nil)
	b := broker.New(broker.Options{Store: store, Registry: reg})
	defer b.Close()

	reg.Register(ctx, switchboard.SourceHost, []switchboard.Tool{{
		Name: "math.add", Description: "Add two integers.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
		Binding:     &switchboard.Binding{Go: true},
	}})
	type in struct{ A, B int }
	b.Handle("math.add", broker.Typed(func(_ context.Context, v in) (int, error) { return v.A + v.B, nil }))

	// Every call names who makes it: here, the workspace's administrator.
	admin := switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}
	inv, err := b.Call(ctx, broker.CallRequest{Tool: "math.add", Input: json.RawMessage(`{"a":2,"b":3}`), Caller: &admin})
	fmt.Println(inv.Status, string(inv.Result), err)

	_, err = b.Call(ctx, broker.CallRequest{Tool: "math.add", Input: json.RawMessage(`{"a":2}`), Caller: &admin})
	fmt.Println(switchboard.CodeOf(err))
	// Output:
	// succeeded 5 <nil>
	// SCHEMA_VIOLATION
}
