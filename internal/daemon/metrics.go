package daemon

import (
	"context"
	"net/http"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/model"
)

// newMetrics builds the daemon's Prometheus metrics (docs/operations.md).
// Calls, approvals and jobs are counted from the ledger entries this
// process appends (activity.Options.OnEntry); the gauges read the
// subsystems at scrape time. A subsystem built later is nil-checked, so a
// scrape during start-up reads 0.
func (d *Daemon) newMetrics() *metrics.Metrics {
	m := metrics.New(&metrics.Options{Tool: d.toolLabels})
	m.Gauge("switchboard_open_tabs", "Browser tabs whose event stream this replica holds (connected or reconnecting).", func() float64 {
		if d.Sessions == nil {
			return 0
		}
		return float64(d.Sessions.Attached())
	})
	m.Gauge("switchboard_agent_sessions", "Agent sessions this replica holds that have not ended.", func() float64 {
		if d.Agents == nil {
			return 0
		}
		return float64(d.Agents.Active())
	})
	m.Gauge("switchboard_runs_active", "Assistant runs this replica is executing.", func() float64 {
		if d.Agent == nil {
			return 0
		}
		return float64(d.Agent.Running())
	})
	m.Gauge("switchboard_jobs_running", "Background jobs this replica is running.", func() float64 {
		if d.Jobs == nil {
			return 0
		}
		return float64(len(d.Jobs.Running()))
	})
	return m
}

// toolLabels is a tool's class and transport for the call metrics: how a
// call reaches the app — a Go function, the app's HTTP backend, or a tab.
func (d *Daemon) toolLabels(name string) (class, transport string, ok bool) {
	if d.Registry == nil {
		return "", "", false
	}
	t, err := d.Registry.Get(context.Background(), name)
	if err != nil {
		// Most browser tools are no catalog entry but a tab's own
		// advertisement: take the class from a live tab advertising it.
		if d.Sessions != nil {
			if lt, ok := d.Sessions.LiveTool(name); ok {
				return string(lt.Class), "browser", true
			}
		}
		return "", "", false
	}
	switch {
	case t.Surface == switchboard.SurfaceBrowser:
		transport = "browser"
	case t.Binding != nil && t.Binding.HTTP != nil:
		transport = "http"
	case t.Binding != nil && t.Binding.Go:
		transport = "go"
	default:
		transport = "none"
	}
	return string(t.Class), transport, true
}

// modelUsage is agent.Options.OnUsage.
func (d *Daemon) modelUsage(name string, u model.Usage, cost float64) {
	d.Metrics.ModelUsage(name, u.InputTokens, u.OutputTokens, u.CachedInputTokens, cost)
	d.Telemetry.ModelUsage(name, u.InputTokens, u.OutputTokens, u.CachedInputTokens, cost)
}

// observe is activity.Options.OnEntry: the ledger entries this process
// appended feed both the metrics and the telemetry sink.
func (d *Daemon) observe(e switchboard.ActivityEntry) {
	d.Metrics.Entry(e)
	d.Telemetry.Entry(e)
}

// metricsRoute is what the API serves at GET /metrics (for the admin
// token): nil when serve gives the metrics a listener of their own.
func (d *Daemon) metricsRoute(opts Options) http.Handler {
	if opts.MetricsElsewhere {
		return nil
	}
	return d.Metrics.Handler()
}
