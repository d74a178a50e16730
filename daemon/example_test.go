package daemon_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/daemon"
	"github.com/switchboardhq/switchboard/panelspec"
	"github.com/switchboardhq/switchboard/panelspec/sqladapter"
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

// A host shows one table of its own database as a panel agents can open
// and fill (docs/panels.md, "Wiring"): a SQL data adapter over the table,
// and a host panel whose form reads and saves one record through it.
func ExampleDaemon_RegisterPanel() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "switchboard-example")
	defer os.RemoveAll(dir)
	store, _ := sqlite.Open(ctx, filepath.Join(dir, "sb.db"), nil)
	defer store.Close()
	d, _ := daemon.New(ctx, daemon.Options{Store: store, AdminToken: daemon.NewSecret()})
	defer d.Close()

	db, _ := sql.Open("sqlite", filepath.Join(dir, "app.db")) // the app's own database
	defer db.Close()
	db.Exec(`CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT, owner TEXT)`)

	a, err := sqladapter.New(db, sqladapter.SQLite, sqladapter.Table{Name: "projects", Key: "id",
		Columns: []string{"name", "owner"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = d.RegisterAdapter(ctx, "projects", a, daemon.AdapterOptions{Description: "the studio's projects",
		QuerySchema: a.QuerySchema(), RecordSchema: a.RecordSchema()})
	fmt.Println(err)

	b := panelspec.NewBuilder(panelspec.OriginHost)
	b.BodyWith(panelspec.BodyProps{Title: "Project settings"},
		b.FormSubmit("project", "save", panelspec.TextField("name", "Name").Required(), panelspec.TextField("owner", "Owner")))
	b.Source("project", panelspec.Source{Kind: panelspec.SourceAdapter, Adapter: "projects", Key: "id",
		Query: json.RawMessage(`{"where": {"id": {"$param": "projectId"}}}`)})
	b.Action("save", panelspec.Mutate("project", panelspec.OpUpdate))
	spec, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	err = d.RegisterPanel(ctx, daemon.Panel{ID: "project.settings", Title: "Project settings",
		Description: "Edit one project's name and owner.", Scope: "one project", Spec: spec})
	fmt.Println(err)

	// Output:
	// <nil>
	// <nil>
}
