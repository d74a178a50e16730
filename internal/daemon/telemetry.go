package daemon

import (
	"context"
	"time"

	"github.com/switchboardhq/switchboard/internal/telemetry"
)

// TelemetryOptions configure the redacted product events
// (docs/operations.md, "Telemetry sink"): a Go callback, a webhook, or
// both. The zero value sends none.
type TelemetryOptions struct {
	Callback func(telemetry.Event)
	// Webhook, when set, receives the events as batched JSON lines.
	Webhook *telemetry.WebhookOptions
}

// newTelemetry starts the sink, fed from the same points as the metrics:
// the ledger's observer (tool outcomes, approval decisions), the agent's
// OnUsage and the panel service's OnCompose. Its drops are a metric.
func (d *Daemon) newTelemetry(o TelemetryOptions) (*telemetry.Sink, error) {
	s, err := telemetry.New(telemetry.Options{Callback: o.Callback, Webhook: o.Webhook, Tool: d.toolLabels})
	if s == nil || err != nil {
		return nil, err
	}
	for _, name := range []string{"callback", "webhook"} {
		if _, ok := s.Dropped()[name]; ok {
			d.Metrics.CounterFunc("switchboard_telemetry_dropped_total",
				"Telemetry events lost to a full queue or a receiver that kept failing, by sink.",
				map[string]string{"sink": name}, func() float64 { return float64(s.Dropped()[name]) })
		}
	}
	return s, nil
}

// closeTelemetry delivers what is queued, waiting at most 5 s for a
// receiver that is slow.
func (d *Daemon) closeTelemetry() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.Telemetry.Close(ctx)
}
