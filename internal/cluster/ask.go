package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
)

// Asking the owner. Work that lives in one replica's memory (a tab's
// stream and panels, an agent session's cancel, a chat's follow-up queue)
// can only be done there; a request that lands elsewhere is sent to that
// replica and its answer awaited:
//
//   - Each subsystem registers, once at start, a Handler per kind of
//     request it answers for what it owns (Asker.Handle).
//   - A caller names the owner (found in the store or from presence) and
//     asks (Asker.Ask). The request goes on bus.ReplicaTopic(owner, "ask"),
//     which only the owner listens to; the answer comes back on the
//     caller's own ReplicaTopic(self, "answer"), subscribed once before any
//     request is sent (the bus's "subscribe before you cause it").
//   - The caller's deadline travels with the request: the owner's handler
//     runs under it, so neither side works for an answer nobody awaits.
//   - The wait ends with the answer (its error keeps its frozen code,
//     message and details), with the caller's deadline (TIMEOUT: the
//     owner may have done it), or as soon as Liveness says the owner is
//     gone (UNAVAILABLE), without waiting for the deadline.
//   - Asking oneself runs the handler in place, without the bus.
//
// Requests and answers are at most MaxBody bytes: one bus message each.
// Larger data travels by reference (an id to read from the store); an
// answer too large to send reaches the caller as PAYLOAD_TOO_LARGE rather
// than as a silent timeout.
//
// The bus delivers at most once, so a lost request or answer ends in
// TIMEOUT. Callers whose request changes something say so and point at
// where the truth is read.

// Handler answers one kind of request on the replica that owns the work.
// ctx carries the caller's remaining deadline. The returned error travels
// back with its code, message and details.
type Handler func(ctx context.Context, req []byte) ([]byte, error)

// MaxBody bounds a request's and an answer's body: one bus message holds
// the body and a short header.
const MaxBody = bus.MaxPayload - 1024

// DefaultAskWait bounds an Ask whose ctx has no deadline, so that a lost
// message does not hold its caller forever.
const DefaultAskWait = 30 * time.Second

// maxHandleWait bounds the deadline a request may give its handler.
const maxHandleWait = 15 * time.Minute

// publishWait bounds sending an answer.
const publishWait = 5 * time.Second

// header precedes a message's body, on one line.
type header struct {
	ID     string             `json:"id"`
	Kind   string             `json:"kind,omitempty"`
	From   string             `json:"from,omitempty"`
	WaitMs int64              `json:"waitMs,omitempty"`
	Error  *switchboard.Error `json:"error,omitempty"`
}

type answer struct {
	body []byte
	err  *switchboard.Error
}

// Asker sends requests to the replica that owns their work and answers
// those sent to this one. One per replica; Close ends it.
type Asker struct {
	b    bus.Bus
	live Liveness
	self string
	log  *slog.Logger

	base   context.Context // handlers' work; cancelled by Close
	stop   context.CancelFunc
	closed chan struct{}
	wg     sync.WaitGroup
	unsubs []func()

	mu       sync.Mutex
	handlers map[string]Handler
	pending  map[string]chan answer
}

// NewAsker starts this replica's side: it listens for requests addressed
// to it and for answers to its own.
func NewAsker(b bus.Bus, live Liveness, log *slog.Logger) (*Asker, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, stop := context.WithCancel(context.Background())
	a := &Asker{b: b, live: live, self: live.Self(), log: log, base: base, stop: stop,
		closed: make(chan struct{}), handlers: map[string]Handler{}, pending: map[string]chan answer{}}
	for name, h := range map[string]bus.Handler{"ask": a.onRequest, "answer": a.onAnswer} {
		u, err := b.Subscribe(bus.ReplicaTopic(a.self, name), h)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.unsubs = append(a.unsubs, u)
	}
	return a, nil
}

// Self is this replica's id.
func (a *Asker) Self() string { return a.self }

// Handle registers h for requests of kind sent to this replica; the
// returned func removes it. One handler per kind: registering a kind
// twice is a wiring bug and panics.
func (a *Asker) Handle(kind string, h Handler) (remove func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.handlers[kind]; dup {
		panic("cluster: a handler for " + kind + " is registered already")
	}
	a.handlers[kind] = h
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.handlers, kind)
	}
}

func (a *Asker) handler(kind string) Handler {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.handlers[kind]
}

// Ask sends req of kind to owner and returns its answer. See the package
// comment above for how it ends.
func (a *Asker) Ask(ctx context.Context, owner, kind string, req []byte) ([]byte, error) {
	if owner == a.self {
		h := a.handler(kind)
		if h == nil {
			return nil, unhandled(a.self, kind)
		}
		return h(ctx, req)
	}
	if len(req) > MaxBody {
		return nil, switchboard.Errorf(switchboard.CodePayloadTooLarge,
			"the %s request for replica %s is %d bytes; at most %d travel between replicas (send a reference to the store instead)", kind, owner, len(req), MaxBody)
	}
	gone := a.live.Gone(owner)
	select {
	case <-gone:
		return nil, ownerGone(owner, kind)
	default:
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultAskWait)
		defer cancel()
	}
	dl, _ := ctx.Deadline()
	h := header{ID: newID(), Kind: kind, From: a.self, WaitMs: max(time.Until(dl).Milliseconds(), 1)}
	ch := make(chan answer, 1)
	a.mu.Lock()
	a.pending[h.ID] = ch
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.pending, h.ID)
		a.mu.Unlock()
	}()
	if err := a.b.Publish(ctx, bus.ReplicaTopic(owner, "ask"), frame(h, req)); err != nil {
		return nil, err
	}
	select {
	case ans := <-ch:
		if ans.err != nil {
			return nil, ans.err
		}
		return ans.body, nil
	case <-gone:
		return nil, ownerGone(owner, kind)
	case <-a.closed:
		return nil, noAnswer(switchboard.CodeUnavailable,
			"this replica is shutting down; the %s request to replica %s may have been carried out: read the state, then retry", kind, owner)
	case <-ctx.Done():
		if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
			return nil, cause
		}
		return nil, noAnswer(switchboard.CodeTimeout,
			"replica %s did not answer the %s request in time; it may have been carried out: read the state, then retry", owner, kind)
	}
}

// errNoAnswer is the cause of an Ask's own TIMEOUT or UNAVAILABLE: the
// owner did not answer (as opposed to an answer that is an error). Its
// text is empty so that wrapping it leaves the message as written.
var errNoAnswer = errors.New("")

// noAnswer is an Ask's own error: code and message, caused by errNoAnswer.
func noAnswer(code switchboard.Code, format string, args ...any) *switchboard.Error {
	return switchboard.Errorf(code, format+"%w", append(args, errNoAnswer)...)
}

// NoAnswer reports whether err ended an Ask without the owner's answer:
// its deadline passed, the owner is known gone, or this replica is
// stopping. The request may or may not have been carried out; a caller
// reads the state where it is kept.
func NoAnswer(err error) bool { return errors.Is(err, errNoAnswer) }

// ownerGone is the error of an Ask whose owner is known gone.
func ownerGone(owner, kind string) *switchboard.Error {
	return noAnswer(switchboard.CodeUnavailable,
		"replica %s, which owns what the %s request is for, is gone (it stopped or died) and cannot answer; a surviving replica takes its work over within seconds: read the state, then retry", owner, kind)
}

func unhandled(replica, kind string) *switchboard.Error {
	return switchboard.Errorf(switchboard.CodeUnavailable,
		"replica %s does not answer %s requests (it is starting or stopping, or runs another version); retry shortly", replica, kind)
}

// Close stops answering and ends the waits of asks in flight. It waits
// for running handlers, whose ctx it cancels.
func (a *Asker) Close() {
	a.mu.Lock()
	select {
	case <-a.closed:
		a.mu.Unlock()
		return
	default:
	}
	close(a.closed)
	a.mu.Unlock()
	for _, u := range a.unsubs {
		u()
	}
	a.stop()
	a.wg.Wait()
}

func (a *Asker) onAnswer(p []byte) {
	h, body, ok := parse(p)
	if !ok {
		return
	}
	a.mu.Lock()
	ch := a.pending[h.ID]
	a.mu.Unlock()
	if ch == nil {
		return // its caller stopped waiting
	}
	select {
	case ch <- answer{body: bytes.Clone(body), err: h.Error}:
	default:
	}
}

func (a *Asker) onRequest(p []byte) {
	h, body, ok := parse(p)
	if !ok || h.ID == "" || h.From == "" {
		return
	}
	body = bytes.Clone(body) // the bus reuses p after this returns
	a.mu.Lock()
	select {
	case <-a.closed:
		a.mu.Unlock()
		return
	default:
	}
	a.wg.Add(1) // under mu: Close's Wait starts after closed is seen
	a.mu.Unlock()
	go func() { // a handler may take long; the bus's delivery goroutine must not
		defer a.wg.Done()
		a.serve(h, body)
	}()
}

// serve runs request h here and sends its answer.
func (a *Asker) serve(h header, req []byte) {
	wait := time.Duration(h.WaitMs) * time.Millisecond
	if wait <= 0 || wait > maxHandleWait {
		wait = maxHandleWait
	}
	ctx, cancel := context.WithTimeout(a.base, wait)
	defer cancel()
	out := header{ID: h.ID}
	var body []byte
	if fn := a.handler(h.Kind); fn == nil {
		out.Error = unhandled(a.self, h.Kind)
	} else if res, err := fn(ctx, req); err != nil {
		out.Error = switchboard.AsError(err)
	} else if len(res) > MaxBody {
		out.Error = switchboard.Errorf(switchboard.CodePayloadTooLarge,
			"replica %s's answer to the %s request is %d bytes; at most %d travel between replicas (ask the replica that holds it for less, or read it from the store)", a.self, h.Kind, len(res), MaxBody)
	} else {
		body = res
	}
	msg := frame(out, body)
	if len(msg) > bus.MaxPayload && out.Error != nil { // an error whose message or details are huge
		out.Error = switchboard.Errorf(out.Error.Code, "%.2000s", out.Error.Message)
		msg = frame(out, nil)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), publishWait)
	defer pcancel()
	if err := a.b.Publish(pctx, bus.ReplicaTopic(h.From, "answer"), msg); err != nil {
		a.log.Warn("could not answer a request from another replica; it ends at its deadline", "kind", h.Kind, "to", h.From, "err", err)
	}
}

// frame is a message: the header as one line of JSON, then the body.
func frame(h header, body []byte) []byte {
	hb, err := json.Marshal(h)
	if err != nil { // details that do not encode: send the rest
		h.Error = switchboard.Errorf(h.Error.Code, "%s", h.Error.Message)
		hb, _ = json.Marshal(h)
	}
	return append(append(hb, '\n'), body...)
}

func parse(p []byte) (header, []byte, bool) {
	var h header
	line, body, ok := bytes.Cut(p, []byte{'\n'})
	if !ok || json.Unmarshal(line, &h) != nil {
		return h, nil, false
	}
	return h, body, true
}

func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
