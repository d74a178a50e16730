package daemon

import (
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/model"
)

// newAgent builds the assistant: model aliases from the config file (or the
// host's resolver), the one call path, live tabs, and chat history in the
// store unless the host brings its own.
func (d *Daemon) newAgent(opts Options) (*agent.Runtime, error) {
	ao := opts.Agent
	ao.Broker, ao.Registry, ao.Browser, ao.Logger = d.Broker, d.Registry, d.Sessions, d.log
	d.runOptions(&ao, opts) // runs in the store, flushes announced on the bus (runs.go)
	ao.Scopes = d.Sessions  // a tab's run: its user's scope (internal/agent/principal.go)
	ao.Sessions = runSessions{d}
	ao.OnUsage = d.modelUsage
	ao.Quotas = d.gov.quotas
	if ao.Approvals == nil && d.Approvals != nil {
		ao.Approvals = d.Approvals // AG-UI and AI SDK clients answer approvals as interrupts
	}
	ao.Models = opts.Resolver
	if ao.Digests == nil && d.Workspace != nil {
		ao.Digests = digests{w: d.Workspace, users: d.Sessions.User}
	}
	if ao.Models == nil {
		r, err := model.NewResolver(opts.Models, nil)
		if err != nil {
			return nil, err
		}
		if len(opts.Models) > 0 {
			d.log.Info("assistant models configured", "aliases", r.Aliases())
		} else {
			// Said for both hosts: serve reads models from its config
			// file, a Go program embedding the daemon has no --config.
			d.log.Info("no assistant model configured: runs will fail with MODEL_ERROR until models are given: " +
				"a models: section in the file of `switchboard serve --config FILE`, or daemon.Options.Models in a Go program")
		}
		ao.Models = r
	}
	if ao.History == nil {
		ao.History = opts.Store
	}
	return agent.New(ao)
}
