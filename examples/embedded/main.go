// Command embedded is a small task-list app that embeds switchboard as a
// library: it opens a SQLite store, wires a daemon, registers its own Go
// functions as api tools, and mounts the daemon's handler in its own
// http.Server next to its own routes. Agents, the switchboard CLI and curl
// then call the same functions the app's UI uses, through one broker.
//
//	go run ./examples/embedded -addr 127.0.0.1:8080 -data /tmp/tasks
//	switchboard --addr http://127.0.0.1:8080/switchboard --token $TOKEN run tasks create --title "Ship it"
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	data := flag.String("data", "embedded-data", "directory for the switchboard database")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *data, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, data string, logw io.Writer) error {
	log := slog.New(slog.NewTextHandler(logw, nil))
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	store, err := sqlite.Open(ctx, filepath.Join(data, "switchboard.db"), nil)
	if err != nil {
		return err
	}
	defer store.Close()
	token := os.Getenv("SWITCHBOARD_TOKEN")
	if token == "" {
		token = daemon.NewSecret()
		log.Info("generated an admin token for this run", "token", token)
	}
	h, closeApp, err := newApp(ctx, store, token, log)
	if err != nil {
		return err
	}
	defer closeApp()
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	log.Info("task app listening", "url", "http://"+addr, "switchboard", "http://"+addr+"/switchboard")
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newApp wires the app: its task list, the switchboard daemon with the
// list's operations registered as Go-function tools, and one mux serving
// both. The returned func closes the daemon.
func newApp(ctx context.Context, store switchboard.Store, token string, log *slog.Logger) (http.Handler, func(), error) {
	d, err := daemon.New(ctx, daemon.Options{Store: store, AdminToken: token, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	tasks := &taskList{}
	for _, reg := range []struct {
		tool switchboard.Tool
		fn   func(context.Context, json.RawMessage) (any, error)
	}{
		{listTool, daemon.Func(tasks.list)},
		{createTool, daemon.Func(tasks.create)},
		{completeTool, daemon.Func(tasks.complete)},
	} {
		if err := d.RegisterFunc(ctx, reg.tool, reg.fn); err != nil {
			d.Close()
			return nil, nil, err
		}
	}
	mux := http.NewServeMux()
	// The app's own routes: what its web UI would call.
	mux.HandleFunc("GET /tasks", func(w http.ResponseWriter, r *http.Request) {
		out, _ := tasks.list(r.Context(), listInput{})
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	// switchboard under a prefix: /switchboard/api/v1/..., /switchboard/healthz.
	mux.Handle("/switchboard/", http.StripPrefix("/switchboard", d.Handler()))
	return mux, func() { d.Close() }, nil
}
