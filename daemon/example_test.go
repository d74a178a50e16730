package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// An app embeds switchboard: it registers a typed Go handler as a tool and
// mounts the daemon's handler in its own mux. examples/embedded is a
// complete app.
func ExampleDaemon_RegisterFunc() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "switchboard-example")
	defer os.RemoveAll(dir)
	store, _ := sqlite.Open(ctx, filepath.Join(dir, "sb.db"), nil)
	defer store.Close()
	d, _ := daemon.New(ctx, daemon.Options{Store: store, AdminToken: daemon.NewSecret()})
	defer d.Close()

	type greet struct {
		Name string `json:"name"`
	}
	err := d.RegisterFunc(ctx, switchboard.Tool{
		Name: "hello.greet", Description: "Greet someone by name.", Class: switchboard.ClassRead,
		InputSchema: []byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
	}, daemon.Func(func(_ context.Context, in greet) (string, error) { return "hello, " + in.Name, nil }))
	fmt.Println(err)

	mux := http.NewServeMux()
	mux.Handle("/switchboard/", http.StripPrefix("/switchboard", d.Handler()))
	_ = mux // serve it: http.ListenAndServe("127.0.0.1:8080", mux)

	// Output: <nil>
}
