// Package task runs delegated tasks: work a user hands to the built-in
// assistant with a goal and a permission envelope (tool globs, a budget of
// calls, tokens and cost, a deadline). A task's record lives in the store
// (switchboard.Task); this package creates it, narrows its envelope to its
// owner's rights, runs it as an assistant run whose calls carry the
// envelope (switchboard.Principal.Task, checked before the assistant's own
// scope), follows the run into the record's status, steps and artifacts,
// and cancels, resumes and — after a restart or a replica's loss —
// recovers it. Transports (the HTTP routes, A2A) only translate.
package task

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// Bounds of a task's request.
const (
	MaxGoalBytes = 16 << 10
	MaxProjects  = 32
	MaxGlobs     = 64
	// storeTimeout bounds a record write made after the request that
	// caused it has gone (a run's end).
	storeTimeout = 10 * time.Second
)

// Store is the part of switchboard.Store tasks need.
type Store interface {
	TaskCreate(ctx context.Context, t switchboard.Task) error
	TaskGet(ctx context.Context, id string) (switchboard.Task, error)
	TaskUpdate(ctx context.Context, t switchboard.Task) (switchboard.Task, error)
	TaskList(ctx context.Context, f switchboard.TaskFilter) ([]switchboard.Task, error)
	InvocationGet(ctx context.Context, id string) (switchboard.Invocation, error)
	// TokenList finds the agent a task is assigned to (assignee.go).
	TokenList(ctx context.Context) ([]switchboard.AgentToken, error)
}

// Tools tells whether a tool still exists (*registry.Registry).
type Tools interface {
	Get(ctx context.Context, name string) (switchboard.Tool, error)
}

// Options configures a Service. Store, Agent and Tools are required.
type Options struct {
	Store Store
	Agent *agent.Runtime
	Tools Tools
	// Replica is this process's replica id, recorded on the tasks it runs.
	Replica string
	// MaxRunTokens and MaxRunCost are the daemon's own run ceilings: a
	// task's budget above them is narrowed to them.
	MaxRunTokens int64
	MaxRunCost   float64
	// Follow, if set, starts following a task handed to an A2A peer from
	// task id until it ends, reporting to HandoffUpdate; it is called for
	// a new handoff and, after a restart, for each one still open.
	Follow func(id string, r switchboard.TaskRemote)
	// CancelRemote, if set, cancels a handed-off task at its peer (task
	// id was cancelled here).
	CancelRemote func(ctx context.Context, id string, r switchboard.TaskRemote) error
	// OnChange, if set, hears every stored change of a task (the daemon
	// refreshes the workspace digest, which lists open tasks).
	OnChange func(switchboard.Task)
	Logger   *slog.Logger
	Now      func() time.Time
}

// Service creates, runs, cancels and resumes tasks. Safe for concurrent
// use.
type Service struct {
	opts Options
	st   Store
	log  *slog.Logger
	now  func() time.Time

	mu      sync.Mutex
	changed map[string]*waiters
	closed  bool
	wg      sync.WaitGroup
}

// New returns a Service.
func New(opts Options) (*Service, error) {
	if opts.Store == nil || opts.Agent == nil || opts.Tools == nil {
		return nil, switchboard.Errorf(switchboard.CodeInternal, "task: Options.Store, Agent and Tools are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{opts: opts, st: opts.Store, log: opts.Logger, now: opts.Now,
		changed: map[string]*waiters{}}, nil
}

// CreateRequest is POST /api/v1/tasks.
type CreateRequest struct {
	Goal string `json:"goal"`
	// Assignee is "assistant" (the default): the built-in assistant; or
	// "agent:<name>", an agent acting for the same user (assignee.go).
	Assignee string                   `json:"assignee,omitempty"`
	Projects []string                 `json:"projects,omitempty"`
	Envelope switchboard.TaskEnvelope `json:"envelope"`
	// Context and Message are the A2A context and message ids of a task
	// created over A2A.
	Context string `json:"-"`
	Message string `json:"-"`
}

// Create validates req, narrows its envelope to by's rights, stores the
// task and starts it. The answer's Narrowed says what was narrowed.
func (s *Service) Create(ctx context.Context, by switchboard.Principal, req CreateRequest) (switchboard.Task, error) {
	t, err := s.newTask(by, req)
	if err != nil {
		return t, err
	}
	if t.Assignee, err = s.assignee(ctx, t.Owner, req.Assignee); err != nil {
		return switchboard.Task{}, err
	}
	if err := s.st.TaskCreate(ctx, t); err != nil {
		return t, err
	}
	t.Revision = 1
	if external(t) {
		s.changedTask(t) // its agent picks it up: it stays submitted until then
		return t, nil
	}
	return s.start(ctx, t, "", false)
}

func (s *Service) newTask(by switchboard.Principal, req CreateRequest) (switchboard.Task, error) {
	goal := strings.TrimSpace(req.Goal)
	switch {
	case goal == "":
		return switchboard.Task{}, switchboard.Errorf(switchboard.CodeInvalidInput, "a task needs a goal: say in a sentence what the assistant should do")
	case len(goal) > MaxGoalBytes || !utf8.ValidString(goal):
		return switchboard.Task{}, switchboard.Errorf(switchboard.CodeInvalidInput, "the goal must be valid UTF-8 of at most %d bytes", MaxGoalBytes)
	}
	env := req.Envelope
	names, err := projects(&env, req.Projects)
	if err != nil {
		return switchboard.Task{}, err
	}
	if len(env.Allow) > MaxGlobs || len(env.Deny) > MaxGlobs {
		return switchboard.Task{}, switchboard.Errorf(switchboard.CodeInvalidInput, "an envelope holds at most %d allow and %d deny globs", MaxGlobs, MaxGlobs)
	}
	for _, g := range slices.Concat(env.Allow, env.Deny) {
		if err := scope.CheckGlob(g); err != nil {
			return switchboard.Task{}, err
		}
	}
	if env.MaxCalls < 0 || env.MaxTokens < 0 || env.MaxCost < 0 {
		return switchboard.Task{}, switchboard.Errorf(switchboard.CodeInvalidInput, "budgets (maxCalls, maxTokens, maxCost) must be zero (none) or positive")
	}
	now := s.now()
	if !env.Deadline.IsZero() && !env.Deadline.After(now) {
		return switchboard.Task{}, switchboard.Errorf(switchboard.CodeInvalidInput, "the deadline %s has already passed", env.Deadline.UTC().Format(time.RFC3339))
	}
	t := switchboard.Task{
		ID: "task_" + newID(), Owner: by.ActsFor(), Creator: by.String(),
		Goal: goal, Projects: names, Status: switchboard.TaskSubmitted, Context: req.Context, Message: req.Message,
		Steps: []switchboard.TaskStep{}, Artifacts: []switchboard.TaskArtifact{},
		CreatedAt: now, UpdatedAt: now,
	}
	if by.Kind == switchboard.PrincipalAgent {
		t.Rights = switchboard.TaskScope{Allow: by.Allow, Deny: by.Deny}
	}
	if t.Envelope, t.Narrowed, err = s.narrow(env, t.Rights); err != nil {
		return t, err
	}
	return t, nil
}

// narrow fits env within rights (the creator's own scope) and the
// daemon's run ceilings, and says what it changed.
func (s *Service) narrow(env switchboard.TaskEnvelope, rights switchboard.TaskScope) (switchboard.TaskEnvelope, []string, error) {
	env, notes, err := Narrow(env, rights)
	if err != nil {
		return env, notes, err
	}
	if max := s.opts.MaxRunTokens; max > 0 && (env.MaxTokens == 0 || env.MaxTokens > max) {
		notes = append(notes, fmt.Sprintf("maxTokens narrowed to the daemon's run ceiling, %d", max))
		env.MaxTokens = max
	}
	if max := s.opts.MaxRunCost; max > 0 && (env.MaxCost == 0 || env.MaxCost > max) {
		notes = append(notes, fmt.Sprintf("maxCost narrowed to the daemon's run ceiling, $%.4f", max))
		env.MaxCost = max
	}
	return env, notes, nil
}

// Narrow fits env's tool globs within rights: an allow glob rights do not
// cover is narrowed to the rights' globs it covers, or dropped, and so is
// each project's tools (a project left with none is dropped); rights'
// deny globs are added. It says each change; an envelope left allowing
// nothing rights allow is FORBIDDEN.
func Narrow(env switchboard.TaskEnvelope, rights switchboard.TaskScope) (switchboard.TaskEnvelope, []string, error) {
	var notes []string
	if len(rights.Allow) > 0 {
		var kept []switchboard.ProjectScope
		for _, p := range env.Projects {
			globs, n := fit(fmt.Sprintf("project %s: tools", p.Name), p.Globs(), rights.Allow)
			if len(globs) == 0 {
				notes = append(notes, fmt.Sprintf("project %s is outside its owner's rights (%s): dropped", p.Name, strings.Join(rights.Allow, ", ")))
				continue
			}
			notes = append(notes, n...)
			if len(n) > 0 {
				p.Allow = globs
			}
			kept = append(kept, p)
		}
		env.Projects = kept
		if len(env.Allow) == 0 {
			env.Allow = slices.Sorted(slices.Values(rights.Allow))
			notes = append(notes, fmt.Sprintf("allow: the envelope named no tools, so it allows what its owner may call (%s)", strings.Join(rights.Allow, ", ")))
		} else {
			var n []string
			env.Allow, n = fit("allow", env.Allow, rights.Allow)
			notes = append(notes, n...)
			if len(env.Allow) == 0 {
				if len(env.Projects) == 0 {
					return env, notes, switchboard.Errorf(switchboard.CodeForbidden,
						"the envelope allows no tool its owner may call (the owner may call %s)", strings.Join(rights.Allow, ", ")).
						WithDetails(map[string]any{"narrowed": notes})
				}
				// An empty allow would admit everything: nothing outside
				// the projects is what is left.
				for _, p := range env.Projects {
					env.Allow = append(env.Allow, p.Globs()...)
				}
				slices.Sort(env.Allow)
				env.Allow = slices.Compact(env.Allow)
				notes = append(notes, "allow: no tool outside the projects is left")
			}
		}
	}
	for _, d := range rights.Deny {
		if !slices.Contains(env.Deny, d) {
			env.Deny = append(env.Deny, d)
			notes = append(notes, fmt.Sprintf("deny %q added: its owner may not call those tools", d))
		}
	}
	return env, notes, nil
}

// fit narrows globs to bound: a glob bound covers stays, a wider one is
// narrowed to the bound's globs it covers, one outside is dropped. It
// returns the globs left, sorted, and a note for each change (what names
// the globs in it).
func fit(what string, globs, bound []string) ([]string, []string) {
	var kept, notes []string
	for _, g := range globs {
		if slices.ContainsFunc(bound, func(r string) bool { return scope.Match(r, g) }) {
			kept = append(kept, g)
			continue
		}
		var within []string
		for _, r := range bound {
			if scope.Match(g, r) {
				within = append(within, r)
			}
		}
		kept = append(kept, within...)
		if len(within) > 0 {
			notes = append(notes, fmt.Sprintf("%s %q is wider than its owner's rights: narrowed to %s", what, g, strings.Join(within, ", ")))
		} else {
			notes = append(notes, fmt.Sprintf("%s %q is outside its owner's rights (%s): dropped", what, g, strings.Join(bound, ", ")))
		}
	}
	slices.Sort(kept)
	return slices.Compact(kept), notes
}

// projects checks the projects a request names (bare names, and the
// envelope's project scopes) and merges them into env.Projects: a name
// given only bare gets the default access. A project given no access is
// limited to env's allow globs when there are any, so the bare form
// admits what it admitted before project scopes. It returns every
// project's name, for the record.
func projects(env *switchboard.TaskEnvelope, bare []string) ([]string, error) {
	all := slices.Clone(env.Projects)
	for _, name := range bare {
		if !slices.ContainsFunc(all, func(p switchboard.ProjectScope) bool { return p.Name == name }) {
			all = append(all, switchboard.ProjectScope{Name: name})
		}
	}
	if len(all) > MaxProjects {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "a task spans at most %d projects", MaxProjects)
	}
	var names []string
	var scoped []switchboard.ProjectScope
	for _, p := range all {
		switch {
		case strings.TrimSpace(p.Name) == "" || len(p.Name) > 200:
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "project names must be 1-200 characters")
		case slices.Contains(names, p.Name):
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "project %q is named twice", p.Name)
		case p.Access != "" && p.Access != switchboard.ProjectRead && p.Access != switchboard.ProjectWrite:
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "project %s: access %q must be read or write", p.Name, p.Access)
		case len(p.Allow) > MaxGlobs:
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "project %s: at most %d allow globs", p.Name, MaxGlobs)
		}
		for _, g := range p.Allow {
			if err := scope.CheckGlob(g); err != nil {
				return nil, err
			}
		}
		names = append(names, p.Name)
		if p.Access == "" {
			p.Access = switchboard.DefaultProjectAccess
			if len(env.Allow) > 0 {
				p.Allow, _ = fit("", p.Globs(), env.Allow)
				if len(p.Allow) == 0 {
					continue // the allow globs leave it no tool: it is only told
				}
			}
		}
		if len(p.Globs()) > 0 {
			scoped = append(scoped, p)
		}
	}
	env.Projects = scoped
	return names, nil
}

// Get returns task id if v may see it; NOT_FOUND otherwise, exactly as for
// an unknown id.
func (s *Service) Get(ctx context.Context, v switchboard.Principal, id string) (switchboard.Task, error) {
	t, err := s.st.TaskGet(ctx, id)
	if err != nil {
		return t, err
	}
	if !sees(v, t) {
		return switchboard.Task{}, switchboard.Errorf(switchboard.CodeNotFound, "no task %q", id)
	}
	return t, nil
}

// List returns the tasks v may see, newest first.
func (s *Service) List(ctx context.Context, v switchboard.Principal, status []switchboard.TaskStatus, limit int) ([]switchboard.Task, error) {
	if v.Kind == switchboard.PrincipalSession { // a tab: its user's (tab.go)
		return s.st.TaskList(ctx, switchboard.TaskFilter{Owner: v.ActsFor(), Status: status, Limit: limit})
	}
	caller, user, ok := workspace.RecordFilter(workspace.ViewerOf(v))
	if !ok {
		return []switchboard.Task{}, nil
	}
	return s.st.TaskList(ctx, switchboard.TaskFilter{Creator: caller, Owner: user, Status: status, Limit: limit})
}

// Open returns the open tasks (submitted, working, input_required) of
// owner, or with owner "" those v may see, newest first, at most limit;
// for an agent of owner, the tasks assigned to it come first.
func (s *Service) Open(ctx context.Context, v switchboard.Principal, owner string, limit int) ([]switchboard.Task, error) {
	open := []switchboard.TaskStatus{switchboard.TaskSubmitted, switchboard.TaskWorking, switchboard.TaskInputRequired}
	var mine []switchboard.Task
	if v.Kind == switchboard.PrincipalAgent && (owner == "" || owner == v.ActsFor()) {
		// An agent's digest names the tasks handed to it first, however
		// many newer ones its user has.
		var err error
		if mine, err = s.Assigned(ctx, v, open, limit); err != nil {
			return nil, err
		}
	}
	var ts []switchboard.Task
	var err error
	if owner == "" {
		ts, err = s.List(ctx, v, open, limit)
	} else {
		ts, err = s.st.TaskList(ctx, switchboard.TaskFilter{Owner: owner, Status: open, Limit: limit})
	}
	for _, t := range ts {
		if len(mine) < limit && !slices.ContainsFunc(mine, func(m switchboard.Task) bool { return m.ID == t.ID }) {
			mine = append(mine, t)
		}
	}
	return mine, err
}

// Cancel stops task id for v: its run is stopped, its record cancelled.
// A task that is already over is CONFLICT.
func (s *Service) Cancel(ctx context.Context, v switchboard.Principal, id string) (switchboard.Task, error) {
	t, err := s.Get(ctx, v, id)
	if err != nil {
		return t, err
	}
	t, err = s.update(ctx, t, func(t *switchboard.Task) error {
		if t.Status.Terminal() {
			return switchboard.Errorf(switchboard.CodeConflict, "task %s is already %s", t.ID, t.Status)
		}
		t.Status, t.FinishedAt = switchboard.TaskCancelled, s.now()
		t.Error = switchboard.Errorf(switchboard.CodeCancelled, "cancelled by %s", v)
		return nil
	})
	if err != nil {
		return t, err
	}
	s.stopRun(ctx, t)
	s.cancelHandoffs(ctx, t)
	return t, nil
}

// stopRun stops the task's latest run, here or on the replica holding it.
func (s *Service) stopRun(ctx context.Context, t switchboard.Task) {
	if len(t.Runs) == 0 {
		return
	}
	id := t.Runs[len(t.Runs)-1]
	if r, err := s.opts.Agent.Get(id); err == nil {
		r.Stop()
		return
	}
	if rec, err := s.opts.Agent.Stored(ctx, id); err == nil {
		_, _ = s.opts.Agent.CancelStored(ctx, rec, 0)
	}
}

// Resume starts a new run of a task that stopped: failed, cancelled, or
// working with no run left (its replica died). A task that is completed,
// or working with its run alive, is CONFLICT.
func (s *Service) Resume(ctx context.Context, v switchboard.Principal, id string) (switchboard.Task, error) {
	t, err := s.Get(ctx, v, id)
	if err != nil {
		return t, err
	}
	switch {
	case t.Status == switchboard.TaskCompleted:
		return t, switchboard.Errorf(switchboard.CodeConflict, "task %s is completed; create a new task to do more", t.ID)
	case !t.Status.Terminal() && external(t):
		return t, switchboard.Errorf(switchboard.CodeConflict, "task %s is %s: %s works on it", t.ID, t.Status, t.Assignee)
	case !t.Status.Terminal() && s.alive(ctx, t):
		return t, switchboard.Errorf(switchboard.CodeConflict, "task %s is %s with run %s in progress", t.ID, t.Status, t.Runs[len(t.Runs)-1])
	case !t.Status.Terminal() && answered(t) && openHandoffs(t):
		return t, switchboard.Errorf(switchboard.CodeConflict, "task %s has answered and waits for the tasks it handed to A2A peers", t.ID)
	}
	if err := s.checkSteps(ctx, t); err != nil {
		_, _ = s.fail(ctx, t, err, true)
		return t, err
	}
	if _, err := s.limits(t); err != nil {
		return t, err // the task stays as it is: nothing is left to spend
	}
	if external(t) {
		return s.reopen(ctx, t)
	}
	return s.start(ctx, t, fmt.Sprintf("resumed by %s", v), true)
}

// alive reports whether the task's latest run is still running anywhere.
func (s *Service) alive(ctx context.Context, t switchboard.Task) bool {
	if len(t.Runs) == 0 {
		return false
	}
	id := t.Runs[len(t.Runs)-1]
	if r, err := s.opts.Agent.Get(id); err == nil {
		select {
		case <-r.Done():
			return false
		default:
			return true
		}
	}
	rec, err := s.opts.Agent.Stored(ctx, id)
	return err == nil && rec.Status == switchboard.RunRunning
}

// update applies fn to the stored task and stores it, retrying on a
// concurrent change (fn sees the fresh record each time).
func (s *Service) update(ctx context.Context, t switchboard.Task, fn func(*switchboard.Task) error) (switchboard.Task, error) {
	if t.Revision == 0 { // only the id is known
		var err error
		if t, err = s.st.TaskGet(ctx, t.ID); err != nil {
			return t, err
		}
	}
	for {
		next := t
		next.Steps = slices.Clone(t.Steps)
		next.Artifacts = slices.Clone(t.Artifacts)
		next.Runs = slices.Clone(t.Runs)
		if err := fn(&next); err != nil {
			return t, err
		}
		next.UpdatedAt = s.now()
		stored, err := s.st.TaskUpdate(ctx, next)
		if err == nil {
			s.changedTask(stored)
			return stored, nil
		}
		if switchboard.CodeOf(err) != switchboard.CodeConflict || stored.ID == "" {
			return t, err
		}
		t = stored
	}
}

// waiters is the channel of a task's next change and how many hold it.
type waiters struct {
	ch chan struct{}
	n  int
}

// Changed returns a channel closed at the next change this process makes
// to task id (A2A streams wait on it, then read the store), and release,
// which the caller calls once it stops waiting: a task that never changes
// again (it finished) keeps no channel once nobody waits on it.
func (s *Service) Changed(id string) (changed <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.changed[id]
	if !ok {
		w = &waiters{ch: make(chan struct{})}
		s.changed[id] = w
	}
	w.n++
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if w.n--; w.n == 0 && s.changed[id] == w {
				delete(s.changed, id)
			}
		})
	}
}

// Waited is how many tasks have a change channel (for tests).
func (s *Service) Waited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.changed)
}

// changedTask tells this process's waiters and OnChange of a stored change.
func (s *Service) changedTask(t switchboard.Task) {
	s.notify(t.ID)
	if s.opts.OnChange != nil {
		s.opts.OnChange(t)
	}
}

func (s *Service) notify(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.changed[id]; ok {
		close(w.ch)
		delete(s.changed, id)
	}
}

// Stopping marks the daemon as shutting down: a task whose run is
// cancelled from now on stays working, for the next start (or a
// survivor) to resume. Call it before the runtime's Close cancels the
// runs.
func (s *Service) Stopping() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// Close is Stopping, then waits for the followers of the runs (which end
// once the runtime's Close has cancelled them).
func (s *Service) Close() {
	s.Stopping()
	s.wg.Wait()
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
