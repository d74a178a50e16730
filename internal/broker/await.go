package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
)

// The life of a call after it is recorded: Submit starts a call and
// returns once it is recorded; Await is the one way anything — a
// transport, the agent loop, a retry with the same key, another replica —
// waits for a call to reach a state; Call is Submit's work done inline.
// Whoever ends a call (finish here, Complete for a tab's answer to a
// browser call, the restart sweep) wakes the waiters: at once in this
// process, over the bus on the replicas that wait for it (ends.go), and,
// when a signal is lost, by a store read every awaitPoll.

// awaitPoll is the one fallback interval of Await: a waiter re-reads the
// store this often when no signal reached it (a record ended by the
// restart sweep of a survivor, a notification lost with a connection).
const awaitPoll = time.Second

// Until says when Await may stop waiting on a record.
type Until func(switchboard.Invocation) bool

// Terminal is the Until of a caller that wants the outcome.
func Terminal(inv switchboard.Invocation) bool { return inv.Status.Terminal() }

// Decided stops once the call no longer waits for a person: it runs, or
// it has ended. An MCP approval round stops there.
func Decided(inv switchboard.Invocation) bool {
	return inv.Status != switchboard.StatusAwaitingApproval && inv.Status != switchboard.StatusPending
}

// Await waits until invocation id satisfies until (nil: Terminal),
// wherever the call runs, and returns the record as stored. It ends with
// ctx's cause when ctx ends first (and the record as last read, if any), and with
// NOT_FOUND for an id nothing recorded; a store fault is read past. The
// store is the only truth: a signal only says "read it again".
func (b *Broker) Await(ctx context.Context, id string, until Until) (switchboard.Invocation, error) {
	if until == nil {
		until = Terminal
	}
	wake := make(chan struct{}, 1)
	ping := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	// Listen before the first read, so an end between the read and the
	// wait is not missed.
	// The broker's ends topic rings the same waiters (onEnd).
	defer b.waiters.add(id, ping)()
	tick := time.NewTicker(awaitPoll)
	defer tick.Stop()
	var asked time.Time
	for {
		inv, err := b.store.InvocationGet(ctx, id)
		switch {
		case ctx.Err() != nil:
			return inv, context.Cause(ctx)
		case switchboard.CodeOf(err) == switchboard.CodeNotFound:
			return inv, err
		case err == nil && until(inv):
			return inv, nil
		}
		if err == nil && b.remoteOwner(inv) && time.Since(asked) >= interestRenew {
			// Owned elsewhere: ask its owner for the end (again after a
			// while, so the owner's set may forget waiters gone quietly).
			asked = time.Now()
			b.askEnd(ctx, inv)
		}
		// A store fault is read again at the next signal or tick.
		select {
		case <-wake:
		case <-tick.C:
		case <-ctx.Done():
			return inv, context.Cause(ctx)
		}
	}
}

// waitSet holds the local waiters of each invocation.
type waitSet struct {
	mu   sync.Mutex
	next int
	by   map[string]map[int]func()
}

func (w *waitSet) add(id string, f func()) (remove func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.by == nil {
		w.by = map[string]map[int]func(){}
	}
	if w.by[id] == nil {
		w.by[id] = map[int]func(){}
	}
	w.next++
	n := w.next
	w.by[id][n] = f
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.by[id], n)
		if len(w.by[id]) == 0 {
			delete(w.by, id)
		}
	}
}

func (w *waitSet) ring(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.by[id] {
		f()
	}
}

// Submit starts a call and returns as soon as it is recorded: awaiting
// approval, dispatched to a tab, running, or already finished (a fast
// read recorded at its end, a replay of a keyed call). A call refused
// before it was recorded returns a zero record and the error; a finished
// one its record and its error, as Call does. The call runs on in the
// broker, bounded by ctx — which must therefore outlive the caller's
// request (context.WithoutCancel, or an agent's work context that an
// interrupt cancels) — and its outcome is read with Await or Get.
func (b *Broker) Submit(ctx context.Context, req CallRequest) (switchboard.Invocation, error) {
	ctx, release, err := b.detach(ctx)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	recorded := make(chan switchboard.Invocation, 1)
	type outcome struct {
		inv switchboard.Invocation
		err error
	}
	done := make(chan outcome, 1)
	req.OnRecord = func(inv switchboard.Invocation) { recorded <- inv }
	req.submitted = true
	go func() {
		defer release()
		inv, err := b.Call(ctx, req)
		done <- outcome{inv, err}
	}()
	select {
	case inv := <-recorded:
		if !inv.Status.Terminal() {
			return inv, nil
		}
		o := <-done // recorded finished: the outcome follows at once
		return o.inv, o.err
	case o := <-done: // refused, or a replay of a finished call
		return o.inv, o.err
	}
}

// detach gives a call Submit starts a context that ends with ctx or at
// Stop, and counts the call until release.
func (b *Broker) detach(ctx context.Context) (context.Context, func(), error) {
	b.lifeMu.Lock()
	defer b.lifeMu.Unlock()
	if b.life.Err() != nil {
		return nil, nil, switchboard.Errorf(switchboard.CodeUnavailable,
			"this replica is stopping and starts no new calls; retry, and another replica (or this one, restarted) takes it")
	}
	b.running.Add(1)
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(b.life, func() { cancel(context.Cause(b.life)) })
	return cctx, func() {
		stop()
		cancel(nil)
		b.running.Done()
	}, nil
}

// Stop ends every call Submit started that still runs, with cause, and
// returns once each has returned. A call that awaits approval is left as
// it is — its record awaiting_approval, its request pending (cause must be
// one the Policy leaves pending: approval.ErrStopped) — for the next start
// or the survivor that takes this replica's calls over to resume; a call
// that runs ends CANCELLED with cause. Submit refuses new calls after it
// (UNAVAILABLE). Stop is how the daemon ends the calls nobody waits on in
// a request: MCP approval rounds, async HTTP calls, parked agent calls.
func (b *Broker) Stop(cause error) {
	b.lifeMu.Lock()
	b.endLife(cause)
	b.lifeMu.Unlock()
	b.running.Wait()
}

// stopped reports whether err is the wait of a submitted call ended by
// Stop: such a call is left awaiting approval (as CallRequest.Durable).
func (b *Broker) stopped(ctx context.Context, req CallRequest, err error) bool {
	if !req.submitted || b.life.Err() == nil {
		return false
	}
	cause := context.Cause(b.life)
	return errors.Is(context.Cause(ctx), cause) && errors.Is(err, cause)
}
