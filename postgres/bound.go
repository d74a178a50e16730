package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// DefaultStatementTimeout bounds each statement of a store operation when
// neither Options.StatementTimeout nor the DSN's statement_timeout says
// otherwise.
const DefaultStatementTimeout = 5 * time.Second

// Every store operation is bounded twice. On the server, statement_timeout
// and lock_timeout (session parameters) cancel a statement that runs or
// waits for a lock longer than the bound; a cancelled statement is rolled
// back, and so is the transaction around it, so nothing was written. On
// the client, a context deadline of boundFactor times the bound covers
// what the server cannot see: the wait for a pool connection and a server
// or network that does not answer at all. It is longer than the server's
// bound so that the server, which knows whether anything committed, answers
// first whenever it can.
const boundFactor = 2

// timeoutParam parses a Postgres duration setting as the DSN may give it:
// an integer of milliseconds or a number with one of Postgres's units
// (us, ms, s, min, h, d). ok is false for anything else.
func timeoutParam(v string) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := v, "ms"
	if i >= 0 {
		num, unit = v[:i], strings.TrimSpace(v[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	units := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
		"min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := units[unit]
	if !ok {
		return 0, false
	}
	return time.Duration(f * float64(u)), true
}

// statementTimeout settles the statement bound from the option and the
// DSN's runtime parameters, and sets statement_timeout and lock_timeout
// (unless the DSN sets them) to it. It returns 0 for no bound.
func statementTimeout(opt time.Duration, params map[string]string) (time.Duration, error) {
	d := opt
	if d == 0 {
		d = DefaultStatementTimeout
		if v, set := params["statement_timeout"]; set {
			var ok bool
			if d, ok = timeoutParam(v); !ok {
				return 0, fmt.Errorf("statement_timeout %q is not a duration such as 5000 or 5s", v)
			}
		}
	}
	if d <= 0 {
		delete(params, "statement_timeout")
		return 0, nil
	}
	ms := strconv.FormatInt(max(d.Milliseconds(), 1), 10)
	params["statement_timeout"] = ms
	if _, set := params["lock_timeout"]; !set {
		params["lock_timeout"] = ms
	}
	return d, nil
}

// deadline is when an operation starting now must have ended; zero when
// operations are unbounded.
func (s *Store) deadline() time.Time {
	if s.timeout <= 0 {
		return time.Time{}
	}
	return time.Now().Add(boundFactor * s.timeout)
}

// within is ctx ended by deadline, if there is one.
func within(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, deadline)
}

// translate is the Store's error translation (the dialect's Translate):
// a bound that was hit, on the server or by the client's deadline while
// nothing could have been written, is UNAVAILABLE with a message a person
// can act on; the rest is the package's translate.
func (s *Store) translate(ctx context.Context, op string, err error) error {
	if err == nil || ctx.Err() != nil {
		return translate(ctx, op, err)
	}
	var coded *switchboard.Error
	if errors.As(err, &coded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "57014" || pe.Code == "55P03") { // query_canceled, lock_not_available
		return s.unanswered(op, s.timeout, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		// The caller's context is live, so the deadline was the store's.
		return s.unanswered(op, boundFactor*s.timeout, err)
	}
	return translate(ctx, op, err)
}

// unanswered is UNAVAILABLE for a store operation cut off after d.
func (s *Store) unanswered(op string, d time.Duration, err error) error {
	return switchboard.Errorf(switchboard.CodeUnavailable,
		"%s: the database did not answer within %s (a lock held elsewhere?); nothing was written; try again: %w", op, d, err)
}

// inFlight translates the error of a write whose statement (or COMMIT)
// was on its way when the client's deadline cut it off: the server may
// have committed it, so it is TIMEOUT, not "nothing was written".
func (s *Store) inFlight(ctx context.Context, op string, err error) error {
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		var coded *switchboard.Error
		if !errors.As(err, &coded) {
			return switchboard.Errorf(switchboard.CodeTimeout,
				"%s: the database did not answer within %s; the write may or may not have been applied: %w",
				op, boundFactor*s.timeout, err)
		}
	}
	return s.translate(ctx, op, err)
}

// bounded wraps statements so that each ends by the operation's deadline.
func (c conn) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return within(ctx, c.deadline)
}

// row is a pgx.Row whose statement context ends once it is scanned.
type row struct {
	r      sqlstore.Row
	cancel context.CancelFunc
}

func (r row) Scan(dest ...any) error {
	defer r.cancel()
	return r.r.Scan(dest...)
}

// rows are pgx.Rows whose statement context ends when they are closed.
type rows struct {
	sqlstore.Rows
	cancel context.CancelFunc
}

func (r rows) Close() {
	r.Rows.Close()
	r.cancel()
}
