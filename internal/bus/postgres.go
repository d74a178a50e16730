package bus

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/postgres"
)

// Postgres is the Bus for several replicas on one Postgres database: a
// Publish reaches this process's subscribers at once and every other
// process's through NOTIFY; each process holds one dedicated connection
// that LISTENs on the channels its subscribers need. The connections are
// the store driver's (postgres.Notifier, River's driver pattern): NOTIFY
// runs on the store's pool, and the listening connection has the store's
// settings; the bus frames, multiplexes and routes.
//
// What the weak contract (bus.go) means here:
//   - A subscriber of this process sees a local Publish synchronously, as
//     with Local; other processes see it once the NOTIFY commits.
//   - Subscribe returns once the channel is LISTENed on the live
//     connection, so a subscriber that subscribes before it causes a
//     message (the rule in bus.go) does not miss a remote reply.
//   - While the listening connection is down (the server restarted, the
//     backend was terminated, the network dropped) remote messages are
//     lost; the connection is re-established and every channel
//     re-LISTENed. Local delivery continues. Subscribers that must not miss
//     re-read the store when they wake or time out.
//   - Payloads whose frame does not fit one NOTIFY (notifyLimit) are stored
//     in the bus_payloads table (postgres migration 0024) and the
//     notification carries the row's id; rows are pruned after payloadTTL.
//
// Topics are multiplexed: a topic's family is its name up to the last dot
// ("invocation.done" for "invocation.done.<id>"), each family is one
// channel, and the frame names the topic, so a subscriber is handed only
// its own topic's messages. A family's channel is LISTENed when its first
// subscriber comes and stays LISTENed for a linger after its last one
// goes, so topics made per call or per session (a result's, a tab's) cost
// no LISTEN/UNLISTEN round trip each: only the first in a while does.
// Channel names carry a prefix derived from the schema, so stores in
// different schemas of one database do not hear each other; a family that
// is not a short plain identifier is hashed, and so is a topic in a frame.
type Postgres struct {
	id    string // this instance; its own notifications are skipped
	ns    string // channel prefix
	n     *postgres.Notifier
	owned *postgres.Notifier // OpenPostgres's own, closed with the bus
	local *Local
	log   *slog.Logger

	linger time.Duration // how long an unused channel stays LISTENed; <0: not at all

	mu        sync.Mutex
	refs      map[string]int       // channel -> live subscriptions
	idle      map[string]time.Time // channel without subscribers -> since when
	keys      map[string]*keyRef   // topic key (in frames) -> subscribed topic
	listening map[string]bool      // channels LISTENed on the current connection
	connected bool
	pid       uint32        // the listening backend; 0 while down
	changed   chan struct{} // closed and replaced when listening/connected change
	closed    bool

	// lag is the message whose NOTIFY this process awaits on its own
	// listening connection, to measure the bus lag (sampleLag).
	lag     atomic.Pointer[lagProbe]
	lagNext atomic.Int64 // unix nanos before which no new sample is taken

	heard   atomic.Int64 // notifications from other processes received (Heard)
	heardMu sync.Mutex
	heardOn map[string]int64 // the same, by channel (HeardOn)

	wake  chan struct{} // the listener has LISTEN/UNLISTEN work
	queue chan notice   // notifications waiting for delivery, in order

	stop context.CancelFunc
	wg   sync.WaitGroup
}

var _ Bus = (*Postgres)(nil)

// PostgresOptions tune OpenPostgres. A nil *PostgresOptions means defaults.
type PostgresOptions struct {
	// Schema, if set, is the search_path of the bus's connections (it must
	// be the store's schema: the payload table lives there) and names the
	// channels' namespace. Default: the DSN's search_path.
	Schema string
	// Logger receives connection losses and dropped messages. Default:
	// discard.
	Logger *slog.Logger
	// Linger is how long a channel stays LISTENed after its last
	// subscriber goes, so the next subscriber of its family need not wait
	// for a LISTEN. Default (0): DefaultLinger; negative: UNLISTEN at once.
	Linger time.Duration
}

// keyRef is one subscribed topic and how many subscriptions hold it.
type keyRef struct {
	topic string
	n     int
}

// DefaultLinger is how long an unused channel stays LISTENed by default:
// long enough that a family whose topics come and go per call (a call's
// result) stays LISTENed between calls, short enough that a process
// stops hearing a family it no longer uses. The UNLISTEN happens on the
// listener's first round after it, within pingInterval.
const DefaultLinger = 30 * time.Second

// Named bounds of the Postgres bus.
const (
	// notifyLimit is the largest NOTIFY payload Postgres accepts (it must
	// be shorter than 8000 bytes in a default build).
	notifyLimit = 7999
	// maxChannel is Postgres's identifier length (NAMEDATALEN-1).
	maxChannel = 63
	// subscribeWait bounds how long Subscribe waits for its LISTEN.
	subscribeWait = 10 * time.Second
	// pingInterval is how often an idle listening connection is checked.
	pingInterval = 30 * time.Second
	// reconnectMin and reconnectMax bound the wait between reconnects.
	reconnectMin = 100 * time.Millisecond
	reconnectMax = 5 * time.Second
	// payloadTTL is how long a stored payload stays readable; pruneEvery
	// is how often this process deletes older ones.
	payloadTTL = 5 * time.Minute
	pruneEvery = time.Minute
	// queueSize bounds notifications waiting for delivery; past it they
	// are dropped (at most once) and logged.
	queueSize = 4096
)

// Frame kinds: after the sender's id, one byte says how the payload
// travels; then the topic's key, a space and the body. The letters differ
// from the per-topic channels' frames of earlier versions ('=', 'b', '#'),
// so a process of either version drops the other's frames on a channel
// name both happen to use rather than misread them.
const (
	frameText  = 'T' // the payload itself (valid UTF-8 without NUL)
	frameB64   = 'B' // base64 of the payload
	frameTable = 'R' // the id of a bus_payloads row
)

// idLen is the length of an instance id in hex.
const idLen = 16

type notice struct{ channel, frame string }

// OpenPostgres connects to the database named by dsn with a notifier of
// its own (postgres.OpenNotifier: a small pool besides the store's), checks
// that the payload table exists (the store's migrations create it: open
// the store first) and starts listening. A process that has the store
// passes its notifier to NewPostgres instead.
func OpenPostgres(ctx context.Context, dsn string, opts *PostgresOptions) (*Postgres, error) {
	var schema string
	if opts != nil {
		schema = opts.Schema
	}
	n, err := postgres.OpenNotifier(ctx, dsn, schema)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeOf(err), "open postgres bus: %w", err)
	}
	b, err := NewPostgres(ctx, n, opts)
	if err != nil {
		n.Close()
		return nil, err
	}
	b.owned = n
	return b, nil
}

// NewPostgres starts a bus on the store's notifier (postgres.Store.Notifier):
// notifications go out on the store's pool and the listening connection
// is the driver's. opts.Schema is ignored: the notifier's schema names
// the channels.
func NewPostgres(ctx context.Context, n *postgres.Notifier, opts *PostgresOptions) (*Postgres, error) {
	const op = "open postgres bus"
	var o PostgresOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	var id [idLen / 2]byte
	_, _ = rand.Read(id[:])
	sum := sha256.Sum256([]byte(n.Schema()))
	b := &Postgres{
		id:        hex.EncodeToString(id[:]),
		ns:        "sb" + hex.EncodeToString(sum[:4]) + ".",
		n:         n,
		local:     NewLocal(),
		log:       o.Logger,
		linger:    o.Linger,
		refs:      map[string]int{},
		idle:      map[string]time.Time{},
		keys:      map[string]*keyRef{},
		listening: map[string]bool{},
		changed:   make(chan struct{}),
		wake:      make(chan struct{}, 1),
		queue:     make(chan notice, queueSize),
	}
	l := n.NewListener(b.enqueue)
	if err := l.Connect(ctx); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "%s: listening connection: %w", op, err)
	}
	// Up from here: a Subscribe before the listener's first round waits
	// for its LISTEN rather than returning at once.
	b.connected, b.pid = true, l.PID()
	rctx, stop := context.WithCancel(context.Background())
	b.stop = stop
	b.wg.Add(3)
	go b.listen(rctx, l)
	go b.deliver(rctx)
	go b.prune(rctx)
	return b, nil
}

// Publish delivers payload to this process's subscribers, then notifies
// the other processes. The NOTIFY is sent even when no other process
// subscribes: this one cannot know that (another replica may subscribe
// to the topic before it causes the message, e.g. a retry waiting for a
// call's result), and the contract promises those subscribers delivery.
func (b *Postgres) Publish(ctx context.Context, topic string, payload []byte) error {
	if err := checkPayload(topic, payload); err != nil {
		return err
	}
	if err := b.local.Publish(ctx, topic, payload); err != nil {
		return err
	}
	ch, key := b.channel(topic), topicKey(topic)
	frame := b.frame(key, payload)
	var err error
	if len(frame) <= notifyLimit {
		b.sampleLag(ch, frame)
		err = b.n.Notify(ctx, ch, frame)
	} else {
		err = b.n.NotifyStored(ctx, ch, b.id+string(rune(frameTable))+key+" ", payload)
	}
	if err != nil {
		return switchboard.Errorf(codeOf(ctx, err), "publish on %s: %w", topic, err)
	}
	return nil
}

// lagProbe is one sampled message: its frame and when it was published.
type lagProbe struct {
	frame string
	sent  time.Time
}

// Bus lag sampling: at most one message a second is timed, from Publish
// until its NOTIFY comes back on this process's own listening connection —
// the path every other replica's notification takes, timed on one clock
// (frames carry no timestamp, and replicas' clocks may differ). A sample
// whose notification never came (the connection dropped) is given up
// after lagGiveUp.
const (
	lagEvery  = time.Second
	lagGiveUp = 30 * time.Second
)

// sampleLag times frame on ch if it is time for a sample and this process
// LISTENs on ch (else its own notification would never come back).
func (b *Postgres) sampleLag(ch, frame string) {
	now := time.Now()
	if now.UnixNano() < b.lagNext.Load() {
		return
	}
	if p := b.lag.Load(); p != nil && now.Sub(p.sent) < lagGiveUp {
		return
	}
	b.mu.Lock()
	listened := b.listening[ch]
	b.mu.Unlock()
	if listened {
		b.lagNext.Store(now.Add(lagEvery).UnixNano())
		b.lag.Store(&lagProbe{frame: frame, sent: now})
	}
}

// ownArrived hears this process's own notification: if it is the sampled
// one, its lag is recorded.
func (b *Postgres) ownArrived(frame string) {
	if p := b.lag.Load(); p != nil && p.frame == frame && b.lag.CompareAndSwap(p, nil) {
		metrics.BusLag(time.Since(p.sent))
	}
}

// frame renders payload as a NOTIFY payload: the sender, a kind, the
// topic's key, a space, the body.
func (b *Postgres) frame(key string, payload []byte) string {
	if plainText(payload) {
		return b.id + string(rune(frameText)) + key + " " + string(payload)
	}
	return b.id + string(rune(frameB64)) + key + " " + base64.StdEncoding.EncodeToString(payload)
}

// plainText reports whether p can be a NOTIFY payload as it is: text in
// the server's encoding (UTF-8 assumed) with no NUL.
func plainText(p []byte) bool {
	for _, c := range p {
		if c == 0 {
			return false
		}
	}
	return utf8.Valid(p)
}

// Subscribe registers h for topic and returns once the topic's family
// channel is LISTENed on the live connection: at once when it already is
// (another topic of the family is subscribed, or was within the linger),
// else after the listener's next round; while that connection is down it
// returns at once (the channel is LISTENed on reconnect).
func (b *Postgres) Subscribe(topic string, h Handler) (func(), error) {
	ch, key := b.channel(topic), topicKey(topic)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "subscribe to %s: bus is closed", topic)
	}
	cancelLocal, err := b.local.Subscribe(topic, h)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	b.refs[ch]++
	delete(b.idle, ch)
	kr := b.keys[key]
	if kr == nil {
		kr = &keyRef{topic: topic}
		b.keys[key] = kr
	}
	kr.n++
	// Also when this is not the channel's first subscription: an earlier
	// one may itself still be waiting for the LISTEN.
	wait := !b.listening[ch]
	b.mu.Unlock()
	if wait {
		b.kick()
		b.awaitListening(ch)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancelLocal()
			b.mu.Lock()
			defer b.mu.Unlock()
			if kr.n--; kr.n <= 0 {
				delete(b.keys, key)
			}
			if b.refs[ch]--; b.refs[ch] <= 0 {
				delete(b.refs, ch)
				b.idle[ch] = time.Now()
				if b.linger < 0 {
					b.kick()
				}
			}
		})
	}, nil
}

// awaitListening waits until ch is LISTENed, the connection is down, the
// bus is closed or subscribeWait passes.
func (b *Postgres) awaitListening(ch string) {
	timer := time.NewTimer(subscribeWait)
	defer timer.Stop()
	for {
		b.mu.Lock()
		done := b.closed || !b.connected || b.listening[ch] || b.refs[ch] == 0
		changed := b.changed
		b.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			b.log.Warn("bus: subscribed before LISTEN was confirmed", "channel", ch)
			return
		}
	}
}

// kick tells the listener that the set of channels changed.
func (b *Postgres) kick() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// broadcast wakes awaitListening; callers hold mu.
func (b *Postgres) broadcast() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// channel maps a topic to its family's NOTIFY channel: the namespace and
// the family when that is a short plain name, else the namespace and a
// hash (never confused with a plain name: '#' is not a plain character).
func (b *Postgres) channel(topic string) string {
	fam := family(topic)
	if len(b.ns)+len(fam) <= maxChannel && plainName(fam) {
		return b.ns + fam
	}
	sum := sha256.Sum256([]byte(fam))
	return b.ns + "#" + hex.EncodeToString(sum[:16])
}

// family is the part of a topic that names its channel: up to the last
// dot, where callers put the per-call or per-session id
// ("session.dispatch.<session>"); a topic without one is its own family.
// Any split is correct (frames name their topic); this one keeps the
// number of channels at the number of kinds of topic.
func family(topic string) string {
	if i := strings.LastIndexByte(topic, '.'); i > 0 {
		return topic[:i]
	}
	return topic
}

// maxKey bounds a topic carried by name in a frame; a longer one, or one
// with characters a plain name does not have, is carried as its hash.
const maxKey = 64

// topicKey is how a frame names its topic: the topic when it is a short
// plain name, else '#' and a hash. Keys hold no space (the frame's
// separator) and are never confused with each other.
func topicKey(topic string) string {
	if len(topic) <= maxKey && plainName(topic) {
		return topic
	}
	sum := sha256.Sum256([]byte(topic))
	return "#" + hex.EncodeToString(sum[:16])
}

func plainName(s string) bool {
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-', c == ':':
		default:
			return false
		}
	}
	return s != ""
}

// Close stops listening and closes the connections; it is safe to call
// more than once. Later calls fail with UNAVAILABLE.
func (b *Postgres) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.broadcast()
	b.mu.Unlock()
	b.stop()
	b.wg.Wait()
	b.local.Close()
	if b.owned != nil {
		b.owned.Close()
	}
	return nil
}

// Connected reports whether the listening connection is up with every
// channel LISTENed (for health checks and tests).
func (b *Postgres) Connected() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.connected {
		return false
	}
	for ch := range b.refs {
		if !b.listening[ch] {
			return false
		}
	}
	return true
}

// Topics reports how many topics have subscribers (tests use it to prove
// that nothing leaks).
func (b *Postgres) Topics() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.keys)
}

// Listened reports how many channels are LISTENed on the current
// connection, lingering ones included (tests use it to prove that a
// family is one channel and that an unused one is UNLISTENed).
func (b *Postgres) Listened() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.listening)
}

// Heard reports how many notifications from other processes reached this
// process's listening connection, whether a subscriber wanted them or not
// (tests use it to prove that a message addressed elsewhere costs this
// process nothing).
func (b *Postgres) Heard() int64 { return b.heard.Load() }

// HeardOn is Heard for the channel that carries topic (its family's).
func (b *Postgres) HeardOn(topic string) int64 {
	b.heardMu.Lock()
	defer b.heardMu.Unlock()
	return b.heardOn[b.channel(topic)]
}

// ListenerPID is the backend process id of the listening connection, 0
// while it is down (tests terminate it to prove the reconnect).
func (b *Postgres) ListenerPID() uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pid
}

func codeOf(ctx context.Context, err error) switchboard.Code {
	if ctx.Err() != nil {
		return switchboard.CodeOf(ctx.Err())
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "22023" { // invalid_parameter_value: e.g. a channel name
		return switchboard.CodeInvalidInput
	}
	return switchboard.CodeUnavailable
}

// payloadRef parses a table frame's id.
func payloadRef(body string) (int64, error) {
	id, err := strconv.ParseInt(body, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad payload reference %q", body)
	}
	return id, nil
}
