package daemon

import (
	"context"
	"encoding/json"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// startWorkspace builds the world model every agent reads — the tabs'
// contexts and the digest compiled from them, the jobs, the approvals and
// the ledger — and puts its drill-down tools in the catalog.
// The tabs' reports are stored with their sessions and relayed on the
// bus, so a digest on any replica shows every tab's contexts.
func (d *Daemon) startWorkspace(ctx context.Context, opts Options) error {
	w, err := workspace.New(workspace.Options{Registry: d.Registry, Agents: d.Agents.Lister(), Jobs: d.Jobs, Approvals: d.Approvals,
		Ledger: d.Ledger, Sessions: d.Sessions, Logger: d.log, PanelAdmits: d.Panels.Admits, Handoffs: d.Agents, Panels: d.Panels,
		Tabs: opts.Store, Bus: opts.Bus, Quotas: d.readerQuotas, Tasks: d.digestTasks})
	if err != nil {
		return err
	}
	if err := w.Load(ctx); err != nil {
		d.log.Warn("the contexts of tabs attached to other replicas show from their next report", "err", err)
	}
	d.Workspace = w
	d.ws.Store(w)
	tools := make([]panel.ToolFunc, 0, 4)
	for _, t := range append(w.Tools(), d.Agents.Tools()...) {
		tools = append(tools, panel.ToolFunc(t))
	}
	return d.registerCore(ctx, tools)
}

// touchWorkspace marks a change batch of the digest (a job moved, an
// approval was asked or decided); before the workspace exists it does
// nothing.
func (d *Daemon) touchWorkspace() {
	if w := d.ws.Load(); w != nil {
		w.Touch()
	}
}

func (d *Daemon) closeWorkspace() {
	if d.Workspace != nil {
		d.Workspace.Close()
	}
}

// digests is the assistant's view of the workspace: a run bound to a tab
// reads the workspace of the user that tab was opened for.
type digests struct {
	w     *workspace.Workspace
	users func(ctx context.Context, sessionID string) (string, error)
}

func (s digests) Digest(ctx context.Context, sessionID string) (json.RawMessage, error) {
	if sessionID != "" {
		user, err := s.users(ctx, sessionID)
		if err != nil {
			user = unknownUser // a tab we cannot place sees no one's tabs but the daemon user's
		}
		ctx = workspace.WithTab(ctx, sessionID, user)
	}
	return s.w.DigestJSON(ctx)
}

func (s digests) Changed() <-chan struct{} {
	ch, _ := s.w.Changed()
	return ch
}

// unknownUser matches no signed-in user.
const unknownUser = "\x00unknown"

var _ agent.Digests = digests{}

// readerQuotas are the daily quotas of the digest's reader: an agent's
// own and its user's (quota.Book.Today); none when the daemon has no
// quota or the store cannot say.
func (d *Daemon) readerQuotas(ctx context.Context) []switchboard.DigestQuota {
	p, ok := switchboard.PrincipalFrom(ctx)
	if !ok {
		return nil
	}
	today, err := d.gov.quotas.Today(ctx, p)
	if err != nil {
		d.log.WarnContext(ctx, "reading the daily quotas for a digest", "err", err)
		return nil
	}
	return today
}
