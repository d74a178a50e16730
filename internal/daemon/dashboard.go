package daemon

import (
	"context"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/panelspec"
)

// registerDemoDashboard registers the demo's dashboard: the curated
// "project-dashboard" example (charts, metrics, progress over the demo's
// projects adapter) as a host panel, so the page and the assistant can open
// it; the assistant can also compose its own from the same example.
func (d *Daemon) registerDemoDashboard(ctx context.Context) error {
	for _, ex := range panelspec.Examples() {
		if ex.Name != "project-dashboard" {
			continue
		}
		spec, issues := panelspec.Validate(ex.Spec, &panelspec.Options{Catalog: d.Panels.Catalog(), ForceOrigin: panelspec.OriginHost})
		if e := panelspec.IssuesError(issues); e != nil {
			return fmt.Errorf("demo dashboard: %w", e)
		}
		return d.RegisterPanel(ctx, panel.Def{ID: "studio.dashboard", Title: "Studio dashboard", Scope: "the whole studio",
			Description:  "Charts of the studio's projects (budget by project, remaining work, tasks closed, work by status) with spend, on-time and release progress.",
			ContextKinds: []string{"page"}, Spec: spec})
	}
	return fmt.Errorf("demo dashboard: the project-dashboard example is missing")
}
