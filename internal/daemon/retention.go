package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
)

// Retention defaults (docs/architecture.md, "Retention").
const (
	// DefaultRetainInvocations is how long an invocation record is kept
	// after its call: a month of GET /invocations/{id}, of late-result
	// answers, and of reversals (which read the record's input).
	DefaultRetainInvocations = 30 * 24 * time.Hour
	// DefaultRetainRuns is how long a finished agent run's record and
	// event log stay readable (in the store, and in the memory of the
	// replica that ran it).
	DefaultRetainRuns = time.Hour
	// DefaultRetainSearchExamples is how long a learned-search example is
	// kept after its last use (internal/registry/learn.go): a season of use, while
	// its weight halves every 30 days.
	DefaultRetainSearchExamples = 90 * 24 * time.Hour
	// DefaultRetentionInterval spaces the sweeps.
	DefaultRetentionInterval = time.Minute
	// retentionBatch is what one delete takes (sqlstore.ExpireBatch), and
	// retentionPause the gap between batches, in which waiting calls get
	// the writer.
	retentionBatch = 128
	retentionPause = 2 * time.Millisecond
)

// RetentionOptions say how long the daemon keeps what it may forget; the
// ledger is not among it, it is kept forever. The config file's
// store.retention and serve's --retain-* flags set them.
type RetentionOptions struct {
	// Invocations is how long invocation records are kept after they were
	// created and finished; DefaultRetainInvocations when 0, forever when
	// negative. Records in flight, awaiting an approval, named by a live
	// idempotency key or with a running job are never deleted.
	Invocations time.Duration
	// IdempotencyKeys is how long an idempotency key is remembered (and
	// replays its call's outcome): the broker's IdempotencyTTL, which it
	// sets, and the age at which the key is deleted;
	// broker.DefaultIdempotencyTTL when 0.
	IdempotencyKeys time.Duration
	// Runs is how long a finished agent run's record and event log stay
	// readable; DefaultRetainRuns when 0, no age limit when negative (the
	// count limit of agent.Options.RetainRuns applies to the runs a
	// replica keeps in memory either way). A running run, and one that
	// ended waiting for an approval, are never deleted.
	Runs time.Duration
	// SearchExamples is how long a learned-search example is kept after
	// its last use; DefaultRetainSearchExamples when 0, forever when
	// negative.
	SearchExamples time.Duration
	// Interval spaces the sweeps; DefaultRetentionInterval when 0.
	Interval time.Duration
	// Now is the sweeper's clock; time.Now when nil.
	Now func() time.Time
}

func (o RetentionOptions) withDefaults() RetentionOptions {
	if o.Invocations == 0 {
		o.Invocations = DefaultRetainInvocations
	}
	if o.IdempotencyKeys <= 0 {
		o.IdempotencyKeys = broker.DefaultIdempotencyTTL
	}
	if o.Runs == 0 {
		o.Runs = DefaultRetainRuns
	}
	if o.SearchExamples == 0 {
		o.SearchExamples = DefaultRetainSearchExamples
	}
	if o.Interval <= 0 {
		o.Interval = DefaultRetentionInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// retention is the background sweeper: every Interval it deletes expired
// keys, then expired records (a record waits for the key that names it),
// in batches, and forgets expired runs.
type retention struct {
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// startRetention starts the sweeper; stopRetention ends it.
func (d *Daemon) startRetention(st switchboard.Store, o RetentionOptions) {
	o = o.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	d.retention.stop = stop
	d.retention.wg.Go(func() {
		t := time.NewTicker(o.Interval)
		defer t.Stop()
		for {
			d.SweepRetention(ctx, st, o)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

func (d *Daemon) stopRetention() {
	if d.retention.stop != nil {
		d.retention.stop()
	}
	d.retention.wg.Wait()
}

// SweepRetention makes one sweep now and returns how many keys and
// records it deleted. A store error ends the sweep (logged); the next
// tries again.
func (d *Daemon) SweepRetention(ctx context.Context, st switchboard.Store, o RetentionOptions) (keys, records int) {
	o = o.withDefaults()
	now := o.Now()
	keys, err := expireAll(ctx, st.IdempotencyExpire, now.Add(-o.IdempotencyKeys))
	if err != nil {
		d.log.WarnContext(ctx, "retention: deleting expired idempotency keys", "err", err)
		return keys, 0
	}
	if o.Invocations > 0 {
		records, err = expireAll(ctx, st.InvocationExpire, now.Add(-o.Invocations))
		if err != nil {
			d.log.WarnContext(ctx, "retention: deleting expired invocation records", "err", err)
		}
	}
	if o.Runs > 0 {
		if d.Agent != nil {
			d.Agent.ExpireRuns(now.Add(-o.Runs))
		}
		if _, err := expireAll(ctx, st.RunExpire, now.Add(-o.Runs)); err != nil {
			d.log.WarnContext(ctx, "retention: deleting expired runs", "err", err)
		}
	}
	if o.SearchExamples > 0 {
		n, err := expireAll(ctx, st.SearchExampleExpire, now.Add(-o.SearchExamples))
		if err != nil {
			d.log.WarnContext(ctx, "retention: deleting expired search examples", "err", err)
		}
		// Searches here stop ranking by them now; other replicas reload
		// within registry.LearnRefresh.
		if n > 0 && d.Registry != nil {
			if err := d.Registry.ReloadLearned(ctx); err != nil {
				d.log.WarnContext(ctx, "retention: reloading learned search examples", "err", err)
			}
		}
	}
	if _, err := d.gov.quotas.Expire(ctx, retentionBatch); err != nil {
		d.log.WarnContext(ctx, "retention: deleting past days' quota counts", "err", err)
	}
	if d.Metrics != nil {
		d.Metrics.RetentionSweep(keys, records)
	}
	if keys+records > 0 {
		d.log.DebugContext(ctx, "retention sweep", "keys", keys, "invocations", records)
	}
	return keys, records
}

// expireAll calls expire batch after batch until a batch comes back short
// or ctx ends, pausing between batches so that no caller waits long for
// the writer.
func expireAll(ctx context.Context, expire func(context.Context, time.Time, int) (int, error), before time.Time) (int, error) {
	total := 0
	for {
		n, err := expire(ctx, before, retentionBatch)
		total += n
		if err != nil || n < retentionBatch {
			return total, err
		}
		select {
		case <-ctx.Done():
			return total, nil
		case <-time.After(retentionPause):
		}
	}
}
