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
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/switchboardhq/switchboard"
)

// Postgres is the Bus for several replicas on one Postgres database: a
// Publish reaches this process's subscribers at once and every other
// process's through NOTIFY; each process holds one dedicated connection
// that LISTENs on the channels its subscribers need (River's pattern).
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
// Topics are mapped to channel names under a prefix derived from the
// schema, so stores in different schemas of one database do not hear each
// other; a topic that is not a short plain identifier is hashed.
type Postgres struct {
	id    string // this instance; its own notifications are skipped
	ns    string // channel prefix
	pool  *pgxpool.Pool
	lcfg  *pgconn.Config
	local *Local
	log   *slog.Logger

	mu        sync.Mutex
	refs      map[string]int    // channel -> live subscriptions
	topics    map[string]string // channel -> topic
	listening map[string]bool   // channels LISTENed on the current connection
	connected bool
	pid       uint32        // the listening backend; 0 while down
	changed   chan struct{} // closed and replaced when listening/connected change
	closed    bool

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
}

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
// travels.
const (
	frameText  = '=' // the payload itself (valid UTF-8 without NUL)
	frameB64   = 'b' // base64 of the payload
	frameTable = '#' // the id of a bus_payloads row
)

// idLen is the length of an instance id in hex.
const idLen = 16

type notice struct{ channel, frame string }

// OpenPostgres connects to the database named by dsn, checks that the
// payload table exists (the store's migrations create it: open the store
// first), opens the listening connection and starts listening.
func OpenPostgres(ctx context.Context, dsn string, opts *PostgresOptions) (*Postgres, error) {
	const op = "open postgres bus"
	var o PostgresOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: %w", op, err)
	}
	if o.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{o.Schema}.Sanitize()
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "switchboard bus"
	if cfg.MaxConns > 4 {
		cfg.MaxConns = 4 // publishes are single statements; the store has its own pool
	}
	lcfg := cfg.ConnConfig.Config.Copy()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "%s: %w", op, err)
	}
	var schema string
	err = pool.QueryRow(ctx, `SELECT current_schema(), (SELECT count(*) FROM bus_payloads WHERE false)`).Scan(&schema, new(int64))
	if err != nil {
		pool.Close()
		return nil, switchboard.Errorf(switchboard.CodeUnavailable,
			"%s: %w (the store's migrations create bus_payloads: open the store first, in the same schema)", op, err)
	}
	var id [idLen / 2]byte
	_, _ = rand.Read(id[:])
	sum := sha256.Sum256([]byte(schema))
	b := &Postgres{
		id:        hex.EncodeToString(id[:]),
		ns:        "sb" + hex.EncodeToString(sum[:4]) + ".",
		pool:      pool,
		lcfg:      lcfg,
		local:     NewLocal(),
		log:       o.Logger,
		refs:      map[string]int{},
		topics:    map[string]string{},
		listening: map[string]bool{},
		changed:   make(chan struct{}),
		wake:      make(chan struct{}, 1),
		queue:     make(chan notice, queueSize),
	}
	lcfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) { b.enqueue(n) }
	conn, err := pgconn.ConnectConfig(ctx, lcfg)
	if err != nil {
		pool.Close()
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "%s: listening connection: %w", op, err)
	}
	// Up from here: a Subscribe before the listener's first round waits
	// for its LISTEN rather than returning at once.
	b.connected, b.pid = true, conn.PID()
	rctx, stop := context.WithCancel(context.Background())
	b.stop = stop
	b.wg.Add(3)
	go b.listen(rctx, conn)
	go b.deliver(rctx)
	go b.prune(rctx)
	return b, nil
}

// Publish delivers payload to this process's subscribers, then notifies
// the other processes.
func (b *Postgres) Publish(ctx context.Context, topic string, payload []byte) error {
	if err := checkPayload(topic, payload); err != nil {
		return err
	}
	if err := b.local.Publish(ctx, topic, payload); err != nil {
		return err
	}
	ch := b.channel(topic)
	frame := b.frame(payload)
	var err error
	if len(frame) <= notifyLimit {
		_, err = b.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, ch, frame)
	} else {
		// One statement: the row and the notification commit together, so
		// a listener that hears the id can read the row.
		_, err = b.pool.Exec(ctx, `WITH p AS (INSERT INTO bus_payloads (payload) VALUES ($3) RETURNING id)
			SELECT pg_notify($1, $2 || p.id) FROM p`, ch, b.id+string(rune(frameTable)), payload)
	}
	if err != nil {
		return switchboard.Errorf(codeOf(ctx, err), "publish on %s: %w", topic, err)
	}
	return nil
}

// frame renders payload as a NOTIFY payload: the sender, a kind, the body.
func (b *Postgres) frame(payload []byte) string {
	if plainText(payload) {
		return b.id + string(rune(frameText)) + string(payload)
	}
	return b.id + string(rune(frameB64)) + base64.StdEncoding.EncodeToString(payload)
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

// Subscribe registers h for topic and returns once the topic's channel is
// LISTENed on the live connection; while that connection is down it
// returns at once (the channel is LISTENed on reconnect).
func (b *Postgres) Subscribe(topic string, h Handler) (func(), error) {
	ch := b.channel(topic)
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
	b.topics[ch] = topic
	fresh := b.refs[ch] == 1
	b.mu.Unlock()
	if fresh {
		b.kick()
		b.awaitListening(ch)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancelLocal()
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.refs[ch]--; b.refs[ch] <= 0 {
				delete(b.refs, ch)
				delete(b.topics, ch)
				b.kick()
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

// channel maps a topic to its NOTIFY channel: the namespace and the topic
// when that is a short plain name, else the namespace and a hash (never
// confused with a plain name: '#' is not a plain character).
func (b *Postgres) channel(topic string) string {
	if len(b.ns)+len(topic) <= maxChannel && plainName(topic) {
		return b.ns + topic
	}
	sum := sha256.Sum256([]byte(topic))
	return b.ns + "#" + hex.EncodeToString(sum[:16])
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
	b.pool.Close()
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

// Topics reports how many channels have subscribers (tests use it to prove
// that nothing leaks).
func (b *Postgres) Topics() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.refs)
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
