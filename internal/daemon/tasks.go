package daemon

import (
	"context"
	"net/http"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/task"
)

// startTasks builds the delegated-task service over the assistant
// (internal/task). It recovers nothing yet: RecoverTasks does, once the
// host has registered its tools.
func (d *Daemon) startTasks(opts Options) error {
	var err error
	d.Tasks, err = task.New(task.Options{Store: opts.Store, Agent: d.Agent, Tools: d.Registry, Replica: d.replica.id,
		MaxRunTokens: opts.Agent.MaxRunTokens, MaxRunCost: opts.Agent.MaxRunCost, Logger: d.log,
		OnChange: func(switchboard.Task) { d.touchWorkspace() }}) // the digest lists open tasks
	return err
}

// digestTasks are the open tasks the digest shows: user's, or for a
// reader bound to no user those it may see (the admin: all).
func (d *Daemon) digestTasks(ctx context.Context, user string) []switchboard.Task {
	if d.Tasks == nil { // the workspace starts before the task service
		return nil
	}
	p, _ := switchboard.PrincipalFrom(ctx)
	ts, err := d.Tasks.Open(ctx, p, user, 5)
	if err != nil {
		d.log.WarnContext(ctx, "the digest lists no tasks", "err", err)
		return nil
	}
	return ts
}

// RecoverTasks resumes the tasks that an earlier start of this daemon (or
// a replica gone before it started) left working, and returns how many.
// Call it once the host's tools are registered (serve does after loading
// its manifest; an embedding app after its RegisterFunc calls): a resumed
// task whose steps name a tool that is not in the catalog fails. Tasks of
// a replica that dies later are resumed by the survivor that takes its
// work over.
func (d *Daemon) RecoverTasks(ctx context.Context) (int, error) {
	d.mu.Lock()
	owners := d.startOwners
	d.startOwners = nil
	d.mu.Unlock()
	if owners == nil {
		return 0, nil
	}
	n, err := d.Tasks.Recover(ctx, owners)
	if n > 0 {
		d.log.Info("resumed delegated tasks left working", "count", n)
	}
	return n, err
}

// a2aRoutes serves the assistant's A2A agent card and JSON-RPC binding
// (internal/a2a) over the task service.
func (d *Daemon) a2aRoutes(opts Options, extra map[string]http.Handler) error {
	srv, err := a2a.New(a2a.Options{Tasks: d.Tasks, Auth: d.auth, OpenIDIssuer: opts.OAuth.Issuer,
		Version: switchboard.ProtocolVersion, Logger: d.log,
		Catalog: func(ctx context.Context) ([]switchboard.Tool, error) {
			// What the assistant may call: the card's skills.
			return d.Registry.List(switchboard.WithPrincipal(ctx, switchboard.Assistant()), switchboard.SurfaceAPI)
		}})
	if err != nil {
		return err
	}
	extra["/.well-known/agent-card.json"] = srv.CardHandler()
	extra["/a2a"] = srv.Handler()
	return nil
}
