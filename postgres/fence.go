package postgres

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
)

// Fencing: a replica another one claimed must write nothing more, even
// when it was only paused (a stopped VM, a long GC, SIGSTOP) and wakes up
// with transactions open and requests queued. Two halves make that hold:
//
//   - Fence(id) names every session of this store after its replica (the
//     application_name ends in the id, which also shows operators in
//     pg_stat_activity which replica a session serves) and, from then on,
//     refuses to open a session once the replica's row is claimed or gone;
//   - CutOff(id), run by the claimer after its claim committed, ends every
//     session so named: their open transactions roll back (releasing the
//     row locks a paused replica holds, which would otherwise stall the
//     claimer's sweep and every other writer behind them) and any session
//     the paused replica opens afterwards is refused.
//
// A session either existed when CutOff ran (and was ended) or opened
// after it, and then its check ran after the claim committed and saw it.
// Both are used only with presence locks on (not behind a transaction
// pooler, whose server sessions are shared).

// fenceState is the replica this store's sessions belong to, set once.
type fenceState struct {
	id   atomic.Pointer[string]
	base string // the DSN's application_name, or "switchboard"
	// by is who claimed the replica, once a session was refused for it.
	by atomic.Pointer[string]
}

// maxAppName is Postgres's limit on application_name (NAMEDATALEN - 1).
const maxAppName = 63

// sessionName is the application_name of a session of replica id.
func (f *fenceState) sessionName(id string) string {
	// Printable ASCII only: Postgres rewrites other bytes (as '?', or from
	// version 16 as \xNN escapes, four bytes each) and the longer name it
	// stores would lose the id at its end, which CutOff matches.
	b := []byte(f.base)
	for i, c := range b {
		if c < 32 || c > 126 {
			b[i] = '?'
		}
	}
	base := string(b)
	if room := maxAppName - len(id) - 1; len(base) > room {
		base = base[:max(room, 0)]
	}
	return base + " " + id
}

// beforeConnect names a session after its replica (pgxpool BeforeConnect).
func (f *fenceState) beforeConnect(_ context.Context, cc *pgx.ConnConfig) error {
	if id := f.id.Load(); id != nil {
		cc.RuntimeParams["application_name"] = f.sessionName(*id)
	}
	return nil
}

// afterConnect refuses a session of a replica that was claimed (pgxpool
// AfterConnect): one read of its row per new session.
func (f *fenceState) afterConnect(ctx context.Context, c *pgx.Conn) error {
	id := f.id.Load()
	if id == nil {
		return nil
	}
	var by string
	err := c.QueryRow(ctx, `SELECT claimed_by FROM replicas WHERE id = $1`, *id).Scan(&by)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		by = "another replica"
	case err != nil:
		return err
	case by == "":
		return nil
	}
	f.by.Store(&by)
	return switchboard.Errorf(switchboard.CodeUnavailable,
		"replica %s was found dead and claimed by %s, which resolved its work: this process must not write; restart it", *id, by)
}

// Fence makes this store's sessions replica id's (see above): sessions
// open now are closed (at once when idle, when returned otherwise) and
// reopened under its name. Call it once the replica's row is registered.
func (s *Store) Fence(id string) error {
	if err := s.check("fence"); err != nil {
		return err
	}
	if id == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "fence: a replica id is required")
	}
	if !s.fence.id.CompareAndSwap(nil, &id) {
		return switchboard.Errorf(switchboard.CodeConflict, "fence: this store's sessions already belong to replica %s", *s.fence.id.Load())
	}
	s.pool.Reset()
	return nil
}

// FencedBy reports who claimed this store's replica, once the store
// refused to open a session because of that claim: the replica learns it
// was claimed even though it can no longer read its row.
func (s *Store) FencedBy() (string, bool) {
	if by := s.fence.by.Load(); by != nil {
		return *by, true
	}
	return "", false
}

// CutOff ends every session of replica id (its open transactions roll
// back) and waits up to a few seconds for each to end. It reports how
// many there were. Run it after claiming id, never on a live replica.
func (s *Store) CutOff(ctx context.Context, id string) (int, error) {
	const op = "cut off replica"
	if err := s.check(op); err != nil {
		return 0, err
	}
	if id == "" {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a replica id is required", op)
	}
	// Every session is signalled in one statement, then their ends are
	// awaited: signalling each in turn and waiting for it could run out
	// the statement bound before the last was even signalled. The name
	// ends in " "+id whatever prefix the replica's DSN gave it.
	const sessions = `FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
		AND right(application_name, $2) = $1`
	var n int
	err := s.bounded(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) `+sessions, " "+id, len(id)+1).Scan(&n)
	})
	if err != nil {
		return 0, s.translate(ctx, op, err)
	}
	left := n
	for wait := time.Now().Add(cutOffWait); left > 0; time.Sleep(10 * time.Millisecond) {
		err := s.bounded(ctx, func(ctx context.Context) error {
			return s.pool.QueryRow(ctx, `SELECT count(*) `+sessions, " "+id, len(id)+1).Scan(&left)
		})
		if err != nil {
			return n, s.translate(ctx, op, err)
		}
		if left > 0 && time.Now().After(wait) {
			return n, switchboard.Errorf(switchboard.CodeUnavailable, "%s: %d of replica %s's %d sessions did not end within %s", op, left, id, n, cutOffWait)
		}
	}
	return n, nil
}

// cutOffWait is how long CutOff waits for the signalled sessions to end
// (a backend ends within milliseconds unless the machine is starved).
const cutOffWait = 5 * time.Second

// bounded runs fn under the store's statement bound.
func (s *Store) bounded(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := within(ctx, s.deadline())
	defer cancel()
	return fn(ctx)
}
