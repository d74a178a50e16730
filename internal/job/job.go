// Package job runs the calls of `job` tools in the background. The broker
// records the call, hands its execution to Start and answers at once with
// the job's id; the work goes on under a context of its own, reports
// progress (0..1 and a message) through switchboard.ReportProgress — kept
// on the job record and forwarded to whoever started it (the agent run's
// event stream, an MCP client's progress notifications while it listens) —
// and ends in exactly one terminal state: the first terminal write wins, so
// a cancel and a finish racing leave one outcome and one ledger entry. Jobs
// are persisted; a job the daemon lost by a restart is marked failed at
// start (Recover), never left running.
package job

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
)

// Defaults for Options.
const (
	// DefaultSaveEvery spaces progress writes to the store; reads on this
	// replica see every report at once.
	DefaultSaveEvery = time.Second
	finishTimeout    = 10 * time.Second
)

// Store is the part of switchboard.Store jobs need.
type Store interface {
	JobCreate(ctx context.Context, j switchboard.Job) error
	JobGet(ctx context.Context, id string) (switchboard.Job, error)
	JobUpdate(ctx context.Context, j switchboard.Job, from ...switchboard.JobStatus) (switchboard.Job, error)
	JobFailRunning(ctx context.Context, at time.Time, cause *switchboard.Error, replicas ...string) (int, error)
	JobList(ctx context.Context, f switchboard.JobFilter) ([]switchboard.Job, error)
}

// Appender writes ledger entries (*activity.Ledger).
type Appender interface {
	Append(ctx context.Context, e *switchboard.ActivityEntry) error
}

// Options configures a Service. Store is required.
type Options struct {
	Store     Store
	Ledger    Appender
	Logger    *slog.Logger
	Now       func() time.Time
	SaveEvery time.Duration
	// OnChange, if set, is told (without blocking) when a job starts,
	// reports progress or ends: the workspace digest's change signal.
	OnChange func()
	// Sessions, if set, records each job as an agent session of its own
	// (kind background): the daemon's workspace.Agents.
	Sessions Sessions
	// Replica is the serve process that runs the jobs (Job.Replica): if it
	// dies, a survivor fails them.
	Replica string
	// Forward, if set, sends the cancel of a job running on another
	// replica to that replica, whose work is the one to stop (a cancel
	// only recorded in the store would leave it running to its end).
	// answered is false when the owner gave no answer (it is gone, or a
	// message was lost): the cancel is then recorded here.
	Forward func(ctx context.Context, owner, id string) (j switchboard.Job, answered bool, err error)
}

// Sessions is told of a job's life, so that each job is an agent session
// at work: started (the context it returns carries the session into the
// job's work, whose calls are then the session's), each progress report,
// and its end. Calls must not block.
type Sessions interface {
	JobStarted(ctx context.Context, j switchboard.Job) context.Context
	JobProgress(ctx context.Context, j switchboard.Job)
	JobEnded(ctx context.Context, j switchboard.Job)
}

// Service runs and tracks jobs. Safe for concurrent use.
type Service struct {
	store  Store
	ledger Appender
	log    *slog.Logger
	now    func() time.Time
	every  time.Duration
	change func()
	agents Sessions
	// replica owns the jobs this service starts (Options.Replica).
	replica string
	forward func(ctx context.Context, owner, id string) (switchboard.Job, bool, error)

	mu   sync.Mutex
	live map[string]*running
}

// running is a job this process executes.
type running struct {
	job    switchboard.Job
	cancel context.CancelCauseFunc
	done   chan struct{}
	once   sync.Once // closes done
	saved  time.Time
}

// New returns a Service.
func New(opts Options) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("job: Options.Store is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SaveEvery <= 0 {
		opts.SaveEvery = DefaultSaveEvery
	}
	if opts.OnChange == nil {
		opts.OnChange = func() {}
	}
	return &Service{store: opts.Store, ledger: opts.Ledger, log: opts.Logger, now: opts.Now, every: opts.SaveEvery,
		change: opts.OnChange, agents: opts.Sessions, live: map[string]*running{}, replica: opts.Replica, forward: opts.Forward}, nil
}

// Recover fails every job a previous run left running: its work died with
// that process. With replicas named, only their jobs (the replicas whose
// process died); with none, every running job (one daemon per store).
//
// Each job ends with its job.finish entry, as a job that ran to its end
// does: one by one with the same compare-and-swap, so a job another
// survivor ended first is left to it. What one listing does not reach
// (more running jobs than a page) is failed in bulk, without entries.
func (s *Service) Recover(ctx context.Context, replicas ...string) (int, error) {
	// OUTCOME_UNKNOWN, as for a call in flight: the work may have done
	// part or all of what it does, and nothing runs it again.
	cause := switchboard.Errorf(switchboard.CodeOutcomeUnknown,
		"the daemon running this job stopped while it ran, so its outcome is unknown; check before starting it again")
	running, err := s.store.JobList(ctx, switchboard.JobFilter{Status: switchboard.JobRunning, Limit: recoverPage})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, j := range running {
		if len(replicas) > 0 && !slices.Contains(replicas, j.Replica) {
			continue // a live replica's
		}
		now := s.now().UTC()
		j.Status, j.Error, j.UpdatedAt, j.FinishedAt = switchboard.JobFailed, cause, now, now
		stored, err := s.store.JobUpdate(ctx, j, switchboard.JobRunning)
		switch {
		case switchboard.CodeOf(err) == switchboard.CodeConflict:
			continue // ended by whoever got there first
		case err != nil:
			return n, err
		}
		n++
		s.recordEnd(ctx, stored, "system")
	}
	rest, err := s.store.JobFailRunning(ctx, s.now(), cause, replicas...)
	return n + rest, err
}

// recoverPage is how many running jobs Recover ends one by one.
const recoverPage = 1000

// Start records a running job for inv and runs work in the background
// (broker.Jobs). The work's context is detached from ctx's cancellation but
// keeps its values (the principal); it ends when the job is cancelled.
func (s *Service) Start(ctx context.Context, inv switchboard.Invocation, work func(ctx context.Context) (json.RawMessage, error)) (switchboard.Job, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	j := switchboard.Job{ID: "job_" + randomHex(16), InvocationID: inv.ID, RunID: inv.RunID, Tool: inv.Tool,
		Caller: inv.Caller, User: inv.User, Status: switchboard.JobRunning, CreatedAt: now, UpdatedAt: now, Replica: s.replica}
	if err := s.store.JobCreate(ctx, j); err != nil {
		return switchboard.Job{}, err
	}
	jctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r := &running{job: j, cancel: cancel, done: make(chan struct{}), saved: now}
	// Progress goes to the record and on to the starter for as long as it
	// listens (its reporter ignores reports once it has gone).
	starter := ctx
	jctx = switchboard.WithProgress(jctx, func(p switchboard.Progress) {
		s.progress(r, p)
		switchboard.ReportProgress(starter, p)
	})
	s.mu.Lock()
	s.live[j.ID] = r
	s.mu.Unlock()
	if s.agents != nil {
		jctx = s.agents.JobStarted(jctx, j)
	}
	s.change()
	go func() {
		defer cancel(nil)
		result, err := s.run(jctx, work)
		s.finish(jctx, r, result, err)
	}()
	return j, nil
}

// run calls work, turning a panic into a failure.
func (s *Service) run(ctx context.Context, work func(context.Context) (json.RawMessage, error)) (result json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.log.ErrorContext(ctx, "job panicked", "panic", v)
			result, err = nil, switchboard.Errorf(switchboard.CodeInternal, "the job panicked: %v", v)
		}
	}()
	return work(ctx)
}

// progress keeps a report on the record: in memory at once, in the store
// at most every SaveEvery.
func (s *Service) progress(r *running, p switchboard.Progress) {
	frac := p.Progress
	if p.Total > 0 {
		frac = p.Progress / p.Total
	}
	frac = math.Max(0, math.Min(1, frac))
	s.mu.Lock()
	if r.job.Status.Terminal() {
		s.mu.Unlock()
		return
	}
	r.job.Progress = math.Max(r.job.Progress, frac)
	if p.Message != "" {
		r.job.Message = p.Message
	}
	r.job.UpdatedAt = s.now().UTC()
	save := r.job.UpdatedAt.Sub(r.saved) >= s.every
	if save {
		r.saved = r.job.UpdatedAt
	}
	j := r.job
	s.mu.Unlock()
	s.change()
	if s.agents != nil {
		s.agents.JobProgress(context.Background(), j)
	}
	if save {
		ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
		defer cancel()
		if _, err := s.store.JobUpdate(ctx, j, switchboard.JobRunning); err != nil && switchboard.CodeOf(err) != switchboard.CodeConflict {
			s.log.Warn("save job progress", "job", j.ID, "err", err)
		}
	}
}

// finish records the work's outcome unless a cancel got there first.
func (s *Service) finish(ctx context.Context, r *running, result json.RawMessage, err error) {
	s.mu.Lock()
	j := r.job
	s.mu.Unlock()
	now := s.now().UTC()
	j.UpdatedAt, j.FinishedAt = now, now
	if err != nil {
		e := switchboard.AsError(err)
		j.Status, j.Error = switchboard.JobFailed, e
		if e.Code == switchboard.CodeCancelled {
			j.Status = switchboard.JobCancelled
		}
	} else {
		j.Status, j.Result, j.Progress = switchboard.JobSucceeded, result, 1
	}
	s.settle(ctx, r, j)
}

// settle is the one terminal compare-and-swap; its winner writes the
// ledger entry. It always retires the live job.
func (s *Service) settle(ctx context.Context, r *running, j switchboard.Job) (switchboard.Job, bool) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	stored, err := s.store.JobUpdate(wctx, j, switchboard.JobRunning)
	won := err == nil
	if err != nil && switchboard.CodeOf(err) != switchboard.CodeConflict {
		s.log.ErrorContext(ctx, "record job outcome", "job", j.ID, "status", j.Status, "err", err)
		stored = j
	}
	s.mu.Lock()
	r.job = stored
	s.mu.Unlock()
	if s.agents != nil && stored.Status.Terminal() {
		s.agents.JobEnded(wctx, stored) // a second settle's end is refused there (already ended)
	}
	// Waiters wake once the outcome is recorded, ledger entry included:
	// the job leaves the live set only then, or a Wait that came between
	// would read the record from the store before its ledger entry exists.
	defer func() {
		s.mu.Lock()
		if s.live[j.ID] == r && won || stored.Status.Terminal() {
			delete(s.live, j.ID)
		}
		s.mu.Unlock()
		s.change()
		r.once.Do(func() { close(r.done) })
	}()
	if won {
		actor := stored.Caller
		if p, ok := switchboard.PrincipalFrom(ctx); ok && stored.Status == switchboard.JobCancelled {
			actor = p.String() // who cancelled it
		}
		s.recordEnd(wctx, stored, actor)
	}
	return stored, won
}

// recordEnd appends the one job.finish entry of a job the caller ended
// (its compare-and-swap won), by actor ("" for anonymous).
func (s *Service) recordEnd(ctx context.Context, stored switchboard.Job, actor string) {
	if s.ledger == nil {
		return
	}
	d := map[string]any{"jobId": stored.ID, "invocationId": stored.InvocationID, "status": stored.Status,
		"durationMs": float64(stored.FinishedAt.Sub(stored.CreatedAt).Microseconds()) / 1000}
	if stored.Error != nil {
		d["code"], d["message"] = stored.Error.Code, stored.Error.Message
	}
	details, _ := json.Marshal(d)
	if actor == "" {
		actor = "anonymous"
	}
	if err := s.ledger.Append(ctx, &switchboard.ActivityEntry{Actor: actor, Verb: activity.VerbJobFinish, Target: stored.Tool, Details: details}); err != nil {
		s.log.ErrorContext(ctx, "append job outcome to the ledger", "job", stored.ID, "err", err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on supported platforms
	return hex.EncodeToString(b)
}
