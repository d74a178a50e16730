package daemon

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/bus"
)

// Agent runs on several replicas (issue 16): the runtime stores every run
// and flushes its events in batches (internal/agent/persist.go); after each flush
// the owning replica publishes "<run id> <last seq>" on topicRuns, and
// every replica's followers of that run read the store at once
// (internal/agent/follow.go). A run whose replica died is ended by the survivor's
// takeover, or by the replica's own next start (endRuns, from sweep).

// topicRuns carries run flush notifications between replicas;
// runCancelTopic (on the holder's replica topic, so only it hears it)
// asks the replica holding a run to stop it (the payload is the run id).
const topicRuns = "runs.flushed"

func runCancelTopic(replica string) string { return bus.ReplicaTopic(replica, "runs.cancel") }

// errRunLost ends the running runs of a dead replica. OUTCOME_UNKNOWN, as
// for its calls in flight: the run's last step may or may not have
// happened (a tool call among it is resolved on its own), and the daemon
// never runs it again; the client starts a new run to go on.
var errRunLost = switchboard.Errorf(switchboard.CodeOutcomeUnknown,
	"outcome unknown: the replica running this run stopped mid-run, so its last step may or may not have completed; it will not be continued — start a new run to go on (tool calls it made are recorded with their own outcomes)")

// runOptions wires the runtime to the store and the bus.
func (d *Daemon) runOptions(ao *agent.Options, opts Options) {
	if ao.Runs == nil {
		ao.Runs = opts.Store
	}
	ao.Replica = d.members.Self()
	b := opts.Bus
	ao.RunFlushed = func(id string, seq int) { d.publishRun(b, id, seq) }
	ao.RelayFollowUp = d.relayFollowUp // followups.go
	ao.RunCancel = func(replica, id string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.Publish(ctx, runCancelTopic(replica), []byte(id)); err != nil {
			d.log.Warn("could not ask the replica holding a run to stop it", "run", id, "err", err)
		}
	}
}

// publishRun announces a stored flush of run id; a lost notification
// costs a follower at most its poll interval.
func (d *Daemon) publishRun(b bus.Bus, id string, seq int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Publish(ctx, topicRuns, []byte(id+" "+strconv.Itoa(seq))); err != nil {
		d.log.Debug("run flush notification not sent; followers elsewhere poll", "run", id, "err", err)
	}
}

// relayRuns wakes this replica's followers when any replica flushed a run.
func (d *Daemon) relayRuns(b bus.Bus) error {
	unsub, err := b.Subscribe(topicRuns, func(p []byte) {
		id, seq, ok := strings.Cut(string(p), " ")
		n, err := strconv.Atoi(seq)
		if ok && err == nil && d.Agent != nil {
			d.Agent.Notified(id, n)
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe to run notifications: %w", err)
	}
	unsubCancel, err := b.Subscribe(runCancelTopic(d.members.Self()), func(p []byte) {
		if d.Agent == nil {
			return
		}
		if run, err := d.Agent.Get(string(p)); err == nil {
			go run.Stop() // a stop may wait for cancelled calls to record their end
		}
	})
	if err != nil {
		unsub()
		return fmt.Errorf("subscribe to run cancellations: %w", err)
	}
	unsubFollowUps := d.serveFollowUps()
	d.stopRuns = func() { unsub(); unsubCancel(); unsubFollowUps() }
	return nil
}

// endRuns ends the running runs of owners (replicas that died, or this
// daemon's previous start): failed with errRunLost and a RUN_ERROR event
// appended to each stored log, so followers on any replica see an end.
// Runs that ended waiting (RunWaiting) are left as they are.
func (d *Daemon) endRuns(ctx context.Context, st switchboard.Store, b bus.Bus, owners map[string]bool) error {
	ids := make([]string, 0, len(owners))
	for id := range owners {
		ids = append(ids, id)
	}
	var ended []switchboard.RunRecord
	n, err := st.RunFailInFlight(ctx, ids, func(r switchboard.RunRecord) (switchboard.RunRecord, []byte) {
		now := time.Now()
		r.Status, r.Error, r.FinishedAt, r.Replica = switchboard.RunFailed, errRunLost, now, d.members.Self()
		ev := &agui.RunError{Message: errRunLost.Message, Code: string(errRunLost.Code)}
		ev.SetTimestamp(now)
		b, _ := agui.Marshal(ev) // a plain struct: cannot fail
		ended = append(ended, r)
		return r, b
	})
	if err != nil {
		return fmt.Errorf("end runs left running: %w", err)
	}
	if n > 0 {
		d.log.Warn("ended agent runs left running by a stopped replica", "count", n)
	}
	for _, r := range ended {
		d.publishRun(b, r.RunID, r.Events) // the terminal event's position (or later)
	}
	return nil
}
