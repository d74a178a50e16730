package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/switchboardhq/switchboard"
)

// Notifier is the store's LISTEN/NOTIFY, for a bus between the processes
// that share its database (internal/bus): notifications are sent on the
// store's own pool, and each Listener is one dedicated connection made
// with the store's connection settings (River's driver pattern: the
// driver owns the connections, the bus only frames and routes). A store
// opened with Open gives one (Store.Notifier); OpenNotifier makes one
// with a small pool of its own, for a process without the store.
type Notifier struct {
	pool   *pgxpool.Pool
	cfg    *pgconn.Config // the listening connections'
	schema string
	owned  bool // the pool is the Notifier's (OpenNotifier), not a store's
}

// Notifier returns the store's notifier; its calls fail with UNAVAILABLE
// once the store is closed. It checks that the table of stored payloads
// exists (the migrations create it) and learns the schema, which names
// the bus's channels.
func (s *Store) Notifier(ctx context.Context) (*Notifier, error) {
	if err := s.check("notifier"); err != nil {
		return nil, err
	}
	return newNotifier(ctx, s.pool, false)
}

// OpenNotifier connects a Notifier of its own to the database named by
// dsn (schema, if set, is the search_path: the store's), for a process
// that does not open the store itself. Close releases its pool.
func OpenNotifier(ctx context.Context, dsn, schema string) (*Notifier, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "open notifier: %w", err)
	}
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "switchboard bus"
	}
	if cfg.MaxConns > 4 {
		cfg.MaxConns = 4 // notifications are single statements
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "open notifier: %w", err)
	}
	n, err := newNotifier(ctx, pool, true)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return n, nil
}

func newNotifier(ctx context.Context, pool *pgxpool.Pool, owned bool) (*Notifier, error) {
	var schema string
	err := pool.QueryRow(ctx, `SELECT current_schema(), (SELECT count(*) FROM bus_payloads WHERE false)`).Scan(&schema, new(int64))
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable,
			"open notifier: %w (the store's migrations create bus_payloads: open the store first, in the same schema)", err)
	}
	// The listening connections have the pool's settings (search_path,
	// application_name, TLS); a statement_timeout among them bounds
	// LISTEN, never the idle wait for notifications.
	cfg := pool.Config().ConnConfig.Config.Copy()
	return &Notifier{pool: pool, cfg: cfg, schema: schema, owned: owned}, nil
}

// Schema is the schema the notifier's connections use.
func (n *Notifier) Schema() string { return n.schema }

// Close releases the pool of a Notifier from OpenNotifier; a store's is
// the store's to close.
func (n *Notifier) Close() {
	if n.owned {
		n.pool.Close()
	}
}

// Notify sends payload on channel.
func (n *Notifier) Notify(ctx context.Context, channel, payload string) error {
	_, err := n.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload)
	return err
}

// NotifyStored stores payload in the bus_payloads table and sends on
// channel prefix followed by the row's id, in one statement: the row and
// the notification commit together, so a listener that hears the id can
// read the row.
func (n *Notifier) NotifyStored(ctx context.Context, channel, prefix string, payload []byte) error {
	_, err := n.pool.Exec(ctx, `WITH p AS (INSERT INTO bus_payloads (payload) VALUES ($3) RETURNING id)
		SELECT pg_notify($1, $2 || p.id) FROM p`, channel, prefix, payload)
	return err
}

// Stored reads the payload NotifyStored stored as row id.
func (n *Notifier) Stored(ctx context.Context, id int64) ([]byte, error) {
	var p []byte
	err := n.pool.QueryRow(ctx, `SELECT payload FROM bus_payloads WHERE id = $1`, id).Scan(&p)
	return p, err
}

// PruneStored deletes stored payloads older than age.
func (n *Notifier) PruneStored(ctx context.Context, age time.Duration) error {
	_, err := n.pool.Exec(ctx, `DELETE FROM bus_payloads WHERE created_at < now() - make_interval(secs => $1)`, age.Seconds())
	return err
}

// Listener is one dedicated connection that LISTENs. It is not safe for
// concurrent use: one goroutine connects, (un)listens and waits.
type Listener struct {
	cfg  *pgconn.Config
	conn *pgconn.PgConn
}

// NewListener returns a Listener whose connections hand every
// notification to onNotify, which runs inside the connection's read loop
// and must not block.
func (n *Notifier) NewListener(onNotify func(channel, payload string)) *Listener {
	cfg := n.cfg.Copy()
	cfg.OnNotification = func(_ *pgconn.PgConn, m *pgconn.Notification) { onNotify(m.Channel, m.Payload) }
	return &Listener{cfg: cfg}
}

// Connect opens the listening connection (closing one still open).
func (l *Listener) Connect(ctx context.Context) error {
	if l.conn != nil {
		_ = l.Close(ctx)
	}
	c, err := pgconn.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return err
	}
	l.conn = c
	return nil
}

// PID is the listening backend's process id, 0 when not connected.
func (l *Listener) PID() uint32 {
	if l.conn == nil {
		return 0
	}
	return l.conn.PID()
}

// Listen LISTENs on add and UNLISTENs drop, in one round trip.
func (l *Listener) Listen(ctx context.Context, add, drop []string) error {
	var sql strings.Builder
	for _, ch := range add {
		sql.WriteString("LISTEN " + pgx.Identifier{ch}.Sanitize() + ";")
	}
	for _, ch := range drop {
		sql.WriteString("UNLISTEN " + pgx.Identifier{ch}.Sanitize() + ";")
	}
	if sql.Len() == 0 {
		return nil
	}
	_, err := l.conn.Exec(ctx, sql.String()).ReadAll()
	return err
}

// WaitForNotification waits until a notification arrives (handed to
// onNotify), ctx ends or the connection fails.
func (l *Listener) WaitForNotification(ctx context.Context) error {
	return l.conn.WaitForNotification(ctx)
}

// Ping proves the connection still answers.
func (l *Listener) Ping(ctx context.Context) error {
	_, err := l.conn.Exec(ctx, "SELECT 1").ReadAll()
	return err
}

// IsClosed reports whether the connection is closed or broken.
func (l *Listener) IsClosed() bool { return l.conn == nil || l.conn.IsClosed() }

// Close closes the connection.
func (l *Listener) Close(ctx context.Context) error {
	if l.conn == nil {
		return nil
	}
	err := l.conn.Close(ctx)
	l.conn = nil
	return err
}
