package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
)

// How the end of a call reaches the replicas that wait for it, and only
// those. A call's record names its owner (Invocation.Replica, the replica
// that recorded it and runs it). Each broker listens to two topics of its
// own replica (bus.ReplicaTopic, so no other replica hears them):
//
//   - ends: "call X ended" (X's id, a newline, the record's JSON when it
//     fits). A replica that ends a call it does not own (a tab's answer
//     POSTed to it, a survivor's sweep) sends it to the owner; the owner
//     hands it to the call's tab wait (inTab) and Await's waiters here,
//     and passes it on to each replica that asked.
//   - interests: "tell replica R when X ends". Await on a replica that
//     does not own the call sends it to the owner once (and again every
//     interestRenew while it waits); the owner keeps the set and sends
//     the end to each R's ends topic. A call already ended when the
//     interest arrives is answered at once.
//
// So a replica that waits for nothing hears nothing. Every signal is a
// hint: Await re-reads the store at each one and every awaitPoll, which
// also covers an owner that died with its set (the survivor ends the
// call; the waiters read it at their next poll).
//
// A broker without a replica id (one process, or tests of two brokers on
// one bus without owners) sends the end of every announced call to all
// of them (allEnds), as every broker on the bus listens there.

const (
	endsName     = "invocation.done"
	interestName = "invocation.interest"
	// allEnds is where brokers without a replica id hear ends.
	allEnds = "invocation.done"
	// interestRenew is how often a remote waiter repeats its interest;
	// interestTTL is how long an owner keeps one not repeated (a call
	// taken over by a survivor never ends on the owner).
	interestRenew = time.Minute
	interestTTL   = 3 * time.Minute
)

// endsTopic is where replica hears the ends of calls.
func endsTopic(replica string) string {
	if replica == "" {
		return allEnds
	}
	return bus.ReplicaTopic(replica, endsName)
}

// listenEnds subscribes this broker to its replica's ends and interests.
// A failure is logged: Await's store poll still ends every wait.
func (b *Broker) listenEnds() {
	if b.bus == nil {
		return
	}
	self := b.opts.Replica
	cancel, err := b.bus.Subscribe(endsTopic(self), b.onEnd)
	if err != nil {
		b.log.Warn("listen for the ends of calls (waiters fall back to reading the store every second)", "err", err)
		return
	}
	b.unlisten = append(b.unlisten, cancel)
	if self == "" {
		return
	}
	cancel, err = b.bus.Subscribe(bus.ReplicaTopic(self, interestName), b.onInterest)
	if err != nil {
		b.log.Warn("listen for other replicas' waiters (they fall back to reading the store every second)", "err", err)
		return
	}
	b.unlisten = append(b.unlisten, cancel)
}

func encodeEnd(inv switchboard.Invocation) []byte {
	p := []byte(inv.ID + "\n")
	if rec, err := json.Marshal(inv); err == nil && len(p)+len(rec) <= bus.MaxPayload {
		p = append(p, rec...)
	}
	return p
}

// onEnd hears the end of a call, on the bus's delivery goroutine: it wakes
// what waits here and passes the end on to the replicas that asked.
func (b *Broker) onEnd(p []byte) {
	i := bytes.IndexByte(p, '\n')
	if i < 1 {
		return
	}
	id := string(p[:i])
	if tc := b.tabs.get(id); tc != nil {
		select {
		case tc.remote <- bytes.Clone(p[i+1:]):
		default:
		}
	}
	b.waiters.ring(id)
	if b.opts.Replica == "" {
		return
	}
	if rs := b.asked.List(id, true, time.Now()); len(rs) > 0 {
		msg := bytes.Clone(p)
		go b.tell(context.Background(), id, rs, msg)
	}
}

// onInterest records that a replica waits for one of this replica's
// calls, and answers at once if the call has ended.
func (b *Broker) onInterest(p []byte) {
	id, replica, ok := strings.Cut(string(p), " ")
	if !ok || id == "" || replica == "" || replica == b.opts.Replica {
		return
	}
	// Recorded before the store is read, and ended takes the set after
	// the store is written: either this read sees the end or ended sees
	// the interest.
	b.asked.Add(id, replica, time.Now())
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
		defer cancel()
		inv, err := b.store.InvocationGet(ctx, id)
		if err != nil || !inv.Status.Terminal() {
			return
		}
		if rs := b.asked.List(id, true, time.Now()); len(rs) > 0 {
			b.tell(ctx, id, rs, encodeEnd(inv))
		}
	}()
}

// tell sends the end of call id to each replica in rs.
func (b *Broker) tell(ctx context.Context, id string, rs []string, msg []byte) {
	for _, r := range rs {
		if err := b.bus.Publish(ctx, endsTopic(r), msg); err != nil {
			b.log.Warn("tell a replica that a call ended (it reads the store within a second)", "invocation", id, "replica", r, "err", err)
		}
	}
}

// askEnd tells the owner of inv that this replica waits for its end.
func (b *Broker) askEnd(ctx context.Context, inv switchboard.Invocation) {
	if err := b.bus.Publish(context.WithoutCancel(ctx), bus.ReplicaTopic(inv.Replica, interestName), []byte(inv.ID+" "+b.opts.Replica)); err != nil {
		b.log.Warn("ask the owner of a call for its end (reading the store every second instead)", "invocation", inv.ID, "owner", inv.Replica, "err", err)
	}
}

// remoteOwner reports whether inv is owned by another replica that this
// one can ask for its end.
func (b *Broker) remoteOwner(inv switchboard.Invocation) bool {
	return b.bus != nil && b.opts.Replica != "" && inv.Replica != "" && inv.Replica != b.opts.Replica
}

// ended wakes the waiters of a call that reached a terminal state: in this
// process always; on other replicas, those that asked this one (the
// owner) for it, and, from a replica that is not the owner, the owner
// (when announce: a call that waited for approval, carried a key or was
// submitted, whose outcome is asked for by id, or a tab's answer the
// owner waits for).
func (b *Broker) ended(ctx context.Context, inv switchboard.Invocation, announce bool) {
	b.waiters.ring(inv.ID)
	if b.bus == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	switch {
	case b.opts.Replica == "":
		if announce {
			b.tell(ctx, inv.ID, []string{""}, encodeEnd(inv))
		}
	case inv.Replica == b.opts.Replica || inv.Replica == "":
		if rs := b.asked.List(inv.ID, true, time.Now()); len(rs) > 0 {
			b.tell(ctx, inv.ID, rs, encodeEnd(inv))
		}
	default:
		// The owner passes it on to the replicas that asked it.
		if announce {
			b.tell(ctx, inv.ID, []string{inv.Replica}, encodeEnd(inv))
		}
	}
}
