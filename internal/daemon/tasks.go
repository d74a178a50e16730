package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"

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

// A2APeer is an external A2A agent this daemon may hand tasks to
// (agents.handoff with its URL as to): the base URL its agent card is
// under, and the variable holding the bearer token that agent issued to
// this daemon (read at each handoff, never stored).
type A2APeer struct {
	URL      string `yaml:"url"`
	TokenEnv string `yaml:"tokenEnv"`
}

// handoffA2A hands a handoff to a configured peer as an A2A task, its
// envelope the handing principal's own scope (a delegated task's envelope
// when it works under one) narrowed further by the handoff's scope: never
// wider than what the hander may call.
func (d *Daemon) handoffA2A(peers []A2APeer) func(ctx context.Context, h switchboard.AgentHandoff) (switchboard.AgentHandoff, error) {
	return func(ctx context.Context, h switchboard.AgentHandoff) (switchboard.AgentHandoff, error) {
		var peer *A2APeer
		for i, p := range peers {
			if strings.TrimSuffix(p.URL, "/") == strings.TrimSuffix(h.To, "/") {
				peer = &peers[i]
			}
		}
		if peer == nil {
			return h, switchboard.Errorf(switchboard.CodeForbidden, "%s is not an A2A agent this daemon hands tasks to; the operator lists them in the config file's a2a.peers", h.To)
		}
		tok := os.Getenv(peer.TokenEnv)
		if tok == "" {
			return h, switchboard.Errorf(switchboard.CodeUnavailable, "the token for the A2A agent at %s is not set: the variable %s is empty", peer.URL, peer.TokenEnv)
		}
		p, _ := switchboard.PrincipalFrom(ctx)
		rights := switchboard.TaskScope{Allow: p.Allow, Deny: p.Deny}
		if p.Task != nil { // already within the task owner's rights
			rights = switchboard.TaskScope{Allow: p.Task.Allow, Deny: p.Task.Deny}
		}
		if p.Kind != switchboard.PrincipalAgent {
			rights = switchboard.TaskScope{}
		}
		var env switchboard.TaskEnvelope
		if h.Scope != nil {
			env.Allow, env.Deny = h.Scope.Allow, h.Scope.Deny
		}
		env, _, err := task.Narrow(env, rights)
		if err != nil {
			return h, err
		}
		del, err := a2a.Delegate(ctx, nil, a2a.Peer{URL: peer.URL, Token: tok}, h.Task, env)
		if err != nil {
			return h, err
		}
		h.Remote, _ = json.Marshal(map[string]any{"agent": del.Agent, "endpoint": del.Endpoint, "taskId": del.TaskID,
			"contextId": del.ContextID, "state": del.State, "envelope": env})
		return h, nil
	}
}
