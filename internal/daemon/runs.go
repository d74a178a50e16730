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

// Agent runs on several replicas: the runtime stores every run and
// flushes its events in batches (internal/agent/persist.go). A replica
// whose clients follow a run another replica holds asks the holder for
// its flush notices on the holder's runsInterestTopic ("<run id> <replica>",
// repeated while it follows); after each flush the holder sends "<run id>
// <last seq>" on runsFlushedTopic of each replica that asked, whose
// followers read the store at once (internal/agent/interest.go keeps the
// sets, follow.go the followers). A replica following nothing of a run
// hears nothing of it. A run whose replica died is ended by the
// survivor's takeover, or by the replica's own next start (endRuns, from
// sweep); followers elsewhere see that end at their next store poll.

// runsFlushedTopic carries flush notices to a replica that follows runs
// held elsewhere; runsInterestTopic asks the replica holding a run for
// them; runCancelTopic asks it to stop the run (the payload is the run
// id). All three are the replica's own topics: only it listens.
func runsFlushedTopic(replica string) string  { return bus.ReplicaTopic(replica, "runs.flushed") }
func runsInterestTopic(replica string) string { return bus.ReplicaTopic(replica, "runs.interest") }
func runCancelTopic(replica string) string    { return bus.ReplicaTopic(replica, "runs.cancel") }

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
	b, self := opts.Bus, d.members.Self()
	ao.RunFlushed = func(replica, id string, seq int) {
		d.publishRun(b, runsFlushedTopic(replica), id+" "+strconv.Itoa(seq))
	}
	ao.RunInterest = func(owner, id string) { d.publishRun(b, runsInterestTopic(owner), id+" "+self) }
	ao.RelayFollowUp = d.relayFollowUp // followups.go
	ao.RunCancel = func(replica, id string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.Publish(ctx, runCancelTopic(replica), []byte(id)); err != nil {
			d.log.Warn("could not ask the replica holding a run to stop it", "run", id, "err", err)
		}
	}
}

// publishRun sends a flush notice or an interest; a lost one costs a
// follower at most its poll interval.
func (d *Daemon) publishRun(b bus.Bus, topic, msg string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Publish(ctx, topic, []byte(msg)); err != nil {
		d.log.Debug("run flush notice or interest not sent; followers poll the store", "topic", topic, "err", err)
	}
}

// relayRuns hands this replica's runtime the flush notices of runs its
// followers asked for, other replicas' interests in its runs, and cancels.
func (d *Daemon) relayRuns(b bus.Bus) error {
	self := d.members.Self()
	unsub, err := b.Subscribe(runsFlushedTopic(self), func(p []byte) {
		id, seq, ok := cutLast(string(p))
		n, err := strconv.Atoi(seq)
		if ok && err == nil && d.Agent != nil {
			d.Agent.Notified(id, n)
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe to run flush notices: %w", err)
	}
	unsubInterest, err := b.Subscribe(runsInterestTopic(self), func(p []byte) {
		id, replica, ok := cutLast(string(p))
		if ok && d.Agent != nil {
			d.Agent.Interested(id, replica)
		}
	})
	if err != nil {
		unsub()
		return fmt.Errorf("subscribe to interests in runs: %w", err)
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
		unsubInterest()
		return fmt.Errorf("subscribe to run cancellations: %w", err)
	}
	unsubFollowUps := d.serveFollowUps()
	d.stopRuns = func() { unsub(); unsubInterest(); unsubCancel(); unsubFollowUps() }
	return nil
}

// cutLast splits "<run id> <seq or replica>" at its last space: a run id
// is the client's to choose (AG-UI's runId) and may hold spaces.
func cutLast(p string) (id, rest string, ok bool) {
	i := strings.LastIndexByte(p, ' ')
	if i < 0 {
		return p, "", false
	}
	return p[:i], p[i+1:], true
}

// endRuns ends the running runs of owners (replicas that died, or this
// daemon's previous start): failed with errRunLost and a RUN_ERROR event
// appended to each stored log, so followers on any replica see an end.
// Runs that ended waiting (RunWaiting) are left as they are.
func (d *Daemon) endRuns(ctx context.Context, st switchboard.Store, owners map[string]bool) error {
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
	// Followers here are woken; those elsewhere asked the dead replica
	// for its notices and read the end at their next store poll.
	for _, r := range ended {
		if d.Agent != nil {
			d.Agent.Notified(r.RunID, r.Events) // the terminal event's position (or later)
		}
	}
	return nil
}
