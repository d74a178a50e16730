package agent

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/model"
)

// Record is one event of a run's stream: its position (the SSE id used for
// Last-Event-ID resume), the event and its AG-UI JSON.
type Record struct {
	Seq   int
	Event agui.Event
	JSON  []byte
}

// Run is one unit of agent work bound to a chat session (ThreadID) and
// optionally a browser session. Its events are kept in order for the life
// of the run, so any number of subscribers can read them from any point
// without slowing the run down: appending wakes every waiting subscriber
// by closing one channel.
type Run struct {
	id, thread, session, owner string
	principal                  switchboard.Principal // who its tool calls run as (principal.go)
	limits                     Limits                // its own ceilings (StartRequest.Limits)
	idemScope                  string                // StartRequest.IdempotencyScope
	harness                    switchboard.Harness
	created                    time.Time
	cancel                     context.CancelCauseFunc
	done                       chan struct{}
	maxEvents                  int

	mu       sync.Mutex
	status   switchboard.RunStatus
	records  []Record
	dropped  int // events not kept past maxEvents (deltas only)
	wake     chan struct{}
	closed   bool
	binding  *model.Binding
	usage    model.Usage
	cost     float64
	steps    int
	calls    int // tool calls it sent to the broker
	err      *switchboard.Error
	finished time.Time
	queue    []queuedFollowUp
	stop     func()   // cancels what an interrupted run left waiting
	waiting  []string // the approvals an interrupted run's calls wait on
	// persist, when the runtime keeps runs in a store, marks the run for
	// the next flush (now: at once, else within the flush interval);
	// flushed is how many records are stored, endStored that the store
	// has it as no longer running (interest.go), lost that the store
	// refused the run (a survivor ended it). persist.go.
	persist   func(r *Run, now bool)
	flushed   int
	endStored bool
	lost      bool
	fmu       sync.Mutex // held while the run is flushed: one flush at a time
}

func newRun(id, thread, session, owner string, h switchboard.Harness, now time.Time, maxEvents int) *Run {
	return &Run{
		id: id, thread: thread, session: session, owner: owner, harness: h, created: now,
		done: make(chan struct{}), maxEvents: maxEvents,
		status: switchboard.RunRunning, wake: make(chan struct{}),
	}
}

// ID, ThreadID and SessionID name the run, its chat session and its
// browser session ("" when none).
func (r *Run) ID() string        { return r.id }
func (r *Run) ThreadID() string  { return r.thread }
func (r *Run) SessionID() string { return r.session }

// Done is closed when the run has emitted its last event.
func (r *Run) Done() <-chan struct{} { return r.done }

// Cancel stops the run; it ends with RUN_FINISHED {outcome: cancelled}.
func (r *Run) Cancel() {
	r.cancel(switchboard.Errorf(switchboard.CodeCancelled, "run %s was cancelled", r.id))
}

// Stop cancels the run; a run that ended interrupted has its calls still
// waiting for approval cancelled (it is then cancelled too).
func (r *Run) Stop() {
	r.Cancel()
	r.mu.Lock()
	stop := r.stop
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Waiting returns the approval ids the calls of a run that ended
// interrupted (RunWaiting) wait on; nil for any other run.
func (r *Run) Waiting() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != switchboard.RunWaiting {
		return nil
	}
	return append([]string(nil), r.waiting...)
}

// append encodes ev and adds it to the log, waking subscribers.
func (r *Run) append(ev agui.Event) { r.add(ev, false) }

// add is append; an event from outside the loop (Emit) is dropped while
// the log holds no RUN_STARTED yet.
func (r *Run) add(ev agui.Event, outside bool) {
	b, err := agui.Marshal(ev)
	if err != nil { // events are plain structs; only a bad Custom value fails
		b, _ = agui.Marshal(&agui.Custom{Name: "switchboard.encode_error", Value: err.Error()})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || outside && len(r.records) == 0 {
		return
	}
	if len(r.records) >= r.maxEvents && isDelta(ev) {
		r.dropped++ // an endless answer must not exhaust memory; starts and ends are kept
		return
	}
	r.records = append(r.records, Record{Seq: len(r.records), Event: ev, JSON: b})
	close(r.wake)
	r.wake = make(chan struct{})
	if r.persist != nil {
		r.persist(r, !isDelta(ev)) // deltas wait for the interval: the loop never waits on the store
	}
}

func isDelta(ev agui.Event) bool {
	switch ev.(type) {
	case *agui.TextMessageContent, *agui.ToolCallArgs:
		return true
	}
	return false
}

// close marks the log complete.
func (r *Run) close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.wake)
	}
	if r.persist != nil {
		r.persist(r, true) // the final record: status, finish time
	}
	r.mu.Unlock()
	close(r.done)
}

// changed marks a finished run's record for the next flush (a status
// that changes after its log closed: an interrupted run stopped).
func (r *Run) changed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.persist != nil {
		r.persist(r, true)
	}
}

// Events returns the records from seq on (no copy of the events: they are
// never changed once appended), a channel closed when more arrive, and
// whether the log is complete (then nothing more will arrive).
func (r *Run) Events(from int) (recs []Record, more <-chan struct{}, complete bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if from < 0 {
		from = 0
	}
	if from < len(r.records) {
		recs = r.records[from:len(r.records):len(r.records)]
	}
	return recs, r.wake, r.closed
}

// Info returns the run's current record.
func (r *Run) Info() switchboard.RunInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.infoLocked()
}

func (r *Run) infoLocked() switchboard.RunInfo {
	in := switchboard.RunInfo{
		RunID: r.id, ThreadID: r.thread, SessionID: r.session, Status: r.status, Harness: r.harness.Name,
		Steps: r.steps, Events: len(r.records), Queued: len(r.queue), Error: r.err,
		CreatedAt: r.created, FinishedAt: r.finished, User: r.principal.ActsFor(),
		Usage: switchboard.RunUsage{InputTokens: r.usage.InputTokens, OutputTokens: r.usage.OutputTokens, TotalTokens: r.usage.Total(), CachedInputTokens: r.usage.CachedInputTokens},
	}
	if b := r.binding; b != nil {
		in.Model = &switchboard.RunModel{Alias: b.Alias, Provider: b.Provider, Model: b.Model}
		if b.Price != nil {
			c := r.cost
			in.Cost = &c
		}
	}
	return in
}

// MarshalJSON renders the run as its switchboard.RunInfo.
func (r *Run) MarshalJSON() ([]byte, error) { return json.Marshal(r.Info()) }

func (r *Run) busy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status == switchboard.RunRunning
}

// ActiveRun returns the chat's run while it is in progress, nil when the
// chat has none (never run, ended, or ended waiting on an interrupt): what
// a client that lost its stream reattaches to.
func (rt *Runtime) ActiveRun(thread string) *Run {
	rt.mu.Lock()
	c := rt.chats[thread]
	var r *Run
	if c != nil {
		r = c.run
	}
	rt.mu.Unlock()
	if r == nil || !r.busy() {
		return nil
	}
	return r
}

// Running counts the runs this process is executing (the metrics' runs
// gauge).
func (rt *Runtime) Running() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	n := 0
	for _, r := range rt.runs {
		select {
		case <-r.Done():
		default:
			n++
		}
	}
	return n
}
