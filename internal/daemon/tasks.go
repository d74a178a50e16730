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
	d.Tasks, err = task.New(task.Options{Store: opts.Store, Agent: d.Agent, Tools: d.Registry, Replica: d.members.Self(),
		MaxRunTokens: opts.Agent.MaxRunTokens, MaxRunCost: opts.Agent.MaxRunCost, Logger: d.log,
		OnChange: func(switchboard.Task) { d.touchWorkspace() }, // the digest lists open tasks
		Follow:   func(id string, r switchboard.TaskRemote) { d.handoffs.Follow(id, r) },
		CancelRemote: func(ctx context.Context, id string, r switchboard.TaskRemote) error {
			return d.handoffs.Cancel(ctx, id, r)
		}})
	if err != nil {
		return err
	}
	d.handoffs = a2a.NewFollower(a2a.FollowerOptions{Tasks: d.Tasks, Logger: d.log,
		Peer: func(url string) (a2a.Peer, error) { return a2aPeer(opts.A2APeers, url) }})
	return nil
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
	var oauthScope string
	if d.resource != nil {
		oauthScope = d.resource.RequiredScope()
	}
	srv, err := a2a.New(a2a.Options{Tasks: d.Tasks, Auth: d.auth, OpenIDIssuer: opts.OAuth.Issuer, OAuthScope: oauthScope,
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

// a2aPeer is the configured peer at url, with its token.
func a2aPeer(peers []A2APeer, url string) (a2a.Peer, error) {
	for _, p := range peers {
		if strings.TrimSuffix(p.URL, "/") != strings.TrimSuffix(url, "/") {
			continue
		}
		tok := os.Getenv(p.TokenEnv)
		if tok == "" {
			return a2a.Peer{}, switchboard.Errorf(switchboard.CodeUnavailable, "the token for the A2A agent at %s is not set: the variable %s is empty", p.URL, p.TokenEnv)
		}
		return a2a.Peer{URL: p.URL, Token: tok}, nil
	}
	return a2a.Peer{}, switchboard.Errorf(switchboard.CodeForbidden, "%s is not an A2A agent this daemon hands tasks to; the operator lists them in the config file's a2a.peers", url)
}

// handoffA2A hands a handoff to a configured peer as an A2A task. Its
// envelope is never wider than the hander's: for a delegated task's
// assistant, the task's envelope (projects and globs) narrowed by the
// handoff's scope, with the calls, tokens and dollars the task has left
// and its deadline; for another agent, the handoff's scope narrowed to
// the agent's own. The handing task then follows the peer's task as a
// step of its own (task.Service.AddHandoff).
func (d *Daemon) handoffA2A(peers []A2APeer) func(ctx context.Context, h switchboard.AgentHandoff) (switchboard.AgentHandoff, error) {
	return func(ctx context.Context, h switchboard.AgentHandoff) (switchboard.AgentHandoff, error) {
		peer, err := a2aPeer(peers, h.To)
		if err != nil {
			return h, err
		}
		p, _ := switchboard.PrincipalFrom(ctx)
		var asked switchboard.TaskScope
		if h.Scope != nil {
			asked = switchboard.TaskScope{Allow: h.Scope.Allow, Deny: h.Scope.Deny}
		}
		var env switchboard.TaskEnvelope
		switch {
		case p.Kind == switchboard.PrincipalAgent && p.Task != nil:
			left, err := d.Tasks.Remaining(ctx, p.Task.ID) // already within the task owner's rights
			if err != nil {
				return h, err
			}
			if env, _, err = task.Narrow(left, asked); err != nil {
				return h, err
			}
		case p.Kind == switchboard.PrincipalAgent:
			env = switchboard.TaskEnvelope{Allow: asked.Allow, Deny: asked.Deny}
			if env, _, err = task.Narrow(env, switchboard.TaskScope{Allow: p.Allow, Deny: p.Deny}); err != nil {
				return h, err
			}
		default:
			env = switchboard.TaskEnvelope{Allow: asked.Allow, Deny: asked.Deny}
		}
		del, err := a2a.Delegate(ctx, nil, peer, h.Task, env)
		if err != nil {
			return h, err
		}
		h.Remote, _ = json.Marshal(map[string]any{"agent": del.Agent, "endpoint": del.Endpoint, "taskId": del.TaskID,
			"contextId": del.ContextID, "state": del.State, "envelope": env})
		if p.Kind == switchboard.PrincipalAgent && p.Task != nil {
			r := switchboard.TaskRemote{Peer: peer.URL, Agent: del.Agent, Endpoint: del.Endpoint, TaskID: del.TaskID,
				ContextID: del.ContextID, State: del.State}
			if err := d.Tasks.AddHandoff(context.WithoutCancel(ctx), p.Task.ID, r, a2a.Status(del.State)); err != nil {
				return h, err
			}
		}
		return h, nil
	}
}
