package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/sse"
	"github.com/switchboardhq/switchboard/internal/task"
)

// Following a handed-off task: once a peer has answered a handoff with
// its task, the handing daemon follows that task to its end — its
// SubscribeToTask stream, and GetTask between streams, backing off while
// the peer cannot be reached — and reports each state and artifact to
// the local task (task.Service.HandoffUpdate).

// Backoff between a follower's reads of a peer that streams no more.
const (
	followMinBackoff = 250 * time.Millisecond
	followMaxBackoff = 30 * time.Second
	// followReadTimeout bounds one GetTask or CancelTask.
	followReadTimeout = 30 * time.Second
)

// FollowerOptions configures a Follower. Tasks and Peer are required.
type FollowerOptions struct {
	Tasks *task.Service
	// Peer returns the configured peer at url with its token; an error
	// (the peer is no longer configured) stops following.
	Peer   func(url string) (Peer, error)
	HTTP   *http.Client
	Logger *slog.Logger
}

// Follower follows handed-off tasks at their peers. Safe for concurrent
// use.
type Follower struct {
	opts   FollowerOptions
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	following map[string]bool // endpoint + " " + peer task id
}

// NewFollower returns a Follower; Close stops what it follows.
func NewFollower(opts FollowerOptions) *Follower {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Follower{opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel, following: map[string]bool{}}
}

// Close stops following (the tasks stay as they are, for the next start
// to follow again) and waits for the followers to end.
func (f *Follower) Close() {
	if f == nil {
		return
	}
	f.cancel()
	f.wg.Wait()
}

// Follow follows the peer's task r, handed off from task id, until it or
// the task ends. Following one peer task twice is one follower.
func (f *Follower) Follow(id string, r switchboard.TaskRemote) {
	key := r.Endpoint + " " + r.TaskID
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.following[key] || f.ctx.Err() != nil {
		return
	}
	f.following[key] = true
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer func() {
			f.mu.Lock()
			delete(f.following, key)
			f.mu.Unlock()
		}()
		f.follow(id, r)
	}()
}

func (f *Follower) follow(id string, r switchboard.TaskRemote) {
	p, err := f.opts.Peer(r.Peer)
	if err != nil {
		f.log.Warn("cannot follow a handed-off task", "task", id, "peer", r.Peer, "remote", r.TaskID, "err", err)
		return
	}
	backoff := followMinBackoff
	for f.ctx.Err() == nil {
		more, heard := f.stream(id, r, p)
		if !more {
			return
		}
		if heard {
			backoff = followMinBackoff
		}
		// The stream ended or could not start: read the task once, then
		// wait before streaming again.
		ctx, cancel := context.WithTimeout(f.ctx, followReadTimeout)
		t, err := GetTask(ctx, f.opts.HTTP, p, r.Endpoint, r.TaskID)
		cancel()
		if err == nil {
			if !f.report(id, r, t) {
				return
			}
		} else if f.ctx.Err() == nil {
			f.log.Warn("could not read a handed-off task", "task", id, "remote", r.TaskID, "err", err)
		}
		select {
		case <-f.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, followMaxBackoff)
	}
}

// stream follows the peer's SubscribeToTask stream until it ends. more is
// false once following is over; heard says whether the stream delivered.
func (f *Follower) stream(id string, r switchboard.TaskRemote, p Peer) (more, heard bool) {
	resp, err := post(f.ctx, f.opts.HTTP, p, r.Endpoint, "SubscribeToTask", idParams{ID: r.TaskID}, "text/event-stream")
	if err != nil {
		return true, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// A finished task is an error answer, not a stream: GetTask reads it.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
		return true, false
	}
	var cur Task
	rd := sse.NewReader(resp.Body)
	for {
		ev, err := rd.Next()
		if err != nil {
			return true, heard
		}
		var sr StreamResponse
		if decodeRPC(r.Endpoint, []byte(ev.Data), &sr) != nil {
			return true, heard
		}
		heard = true
		switch {
		case sr.Task != nil:
			cur = *sr.Task
		case sr.StatusUpdate != nil:
			cur.Status = sr.StatusUpdate.Status
		case sr.ArtifactUpdate != nil:
			cur.Artifacts = append(cur.Artifacts, sr.ArtifactUpdate.Artifact)
		}
		if cur.Status.State != "" && !f.report(id, r, cur) {
			return false, true
		}
	}
}

// report hands what the peer says of its task to the local task, and
// says whether to go on following.
func (f *Follower) report(id string, r switchboard.TaskRemote, t Task) bool {
	r.State, r.Message = t.Status.State, ""
	if m := t.Status.Message; m != nil {
		r.Message = text(m.Parts)
	}
	var arts []switchboard.TaskArtifact
	for _, a := range t.Artifacts {
		arts = append(arts, artifact(a))
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(f.ctx), followReadTimeout)
	defer cancel()
	more, err := f.opts.Tasks.HandoffUpdate(ctx, id, r, Status(r.State), arts)
	if err != nil {
		f.log.Warn("could not record a handed-off task's state", "task", id, "remote", r.TaskID, "err", err)
		return switchboard.CodeOf(err) != switchboard.CodeNotFound
	}
	return more
}

// Cancel cancels the peer's task r, handed off from task id (which was
// cancelled here), and records the peer's answer.
func (f *Follower) Cancel(ctx context.Context, id string, r switchboard.TaskRemote) error {
	p, err := f.opts.Peer(r.Peer)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, followReadTimeout)
	defer cancel()
	t, err := CancelTask(ctx, f.opts.HTTP, p, r.Endpoint, r.TaskID)
	var pe *peerError
	if errors.As(err, &pe) && pe.rpc.Code == codeTaskNotCancelable {
		t, err = GetTask(ctx, f.opts.HTTP, p, r.Endpoint, r.TaskID) // it ended first: record how
	}
	if err != nil {
		return err
	}
	f.report(id, r, t)
	return nil
}

// Status is switchboard's status of an A2A task state.
func Status(state string) switchboard.TaskStatus {
	for st, name := range states {
		if name == state {
			return st
		}
	}
	switch state {
	case "TASK_STATE_REJECTED":
		return switchboard.TaskFailed
	case "TASK_STATE_AUTH_REQUIRED":
		return switchboard.TaskInputRequired
	}
	return switchboard.TaskWorking
}

// artifact is an A2A artifact as a task's: its text parts joined, its
// first data part as data.
func artifact(a Artifact) switchboard.TaskArtifact {
	out := switchboard.TaskArtifact{ID: a.ArtifactID, Name: a.Name, Text: text(a.Parts)}
	for _, p := range a.Parts {
		if len(p.Data) > 0 && json.Valid(p.Data) {
			out.Data = p.Data
			break
		}
	}
	return out
}

func text(parts []Part) string {
	var b []string
	for _, p := range parts {
		if p.Text != nil {
			b = append(b, *p.Text)
		}
	}
	return strings.Join(b, "\n")
}
