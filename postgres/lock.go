package postgres

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
)

// Presence locks: a replica holds a session-level advisory lock, keyed on
// its replica id, on a connection of its own. Postgres releases a session
// lock the moment the session ends, and a process killed outright ends its
// sessions with it (the kernel closes its sockets), so another replica
// that finds the lock free knows within milliseconds what a heartbeat
// timeout tells after many seconds. internal/cluster (members.go) uses
// this through its Locks interface; the heartbeat stays the fallback.

// lockPing is how often a held lock's connection is checked: a dropped
// connection is replaced and the lock taken again well within one of the
// survivors' probes (cluster.DefaultProbe), so a blip is not a death.
const lockPing = 250 * time.Millisecond

// LockKey is the advisory lock key HoldLock takes for name (a replica id):
// 64 bits of its FNV-1a hash, under a prefix of its own so no other
// advisory lock of the database (the migrations', an application's) is
// likely to share it. In pg_locks it shows as classid (high 32 bits) and
// objid (low 32 bits) with objsubid 1.
func LockKey(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("switchboard.presence:" + name))
	return int64(h.Sum64())
}

// heldLock is one lock HoldLock keeps.
type heldLock struct {
	stop context.CancelFunc
	done chan struct{}
}

// HoldLock takes the session lock named name on a connection of its own
// and keeps it until release is called or the Store is closed: when that
// connection drops, it connects again and retakes the lock at once, then
// calls relocked (if not nil) so the holder can tell the others it is
// still there. It returns once the lock is held, or CONFLICT when another
// session holds it.
func (s *Store) HoldLock(ctx context.Context, name string, relocked func()) (release func(), err error) {
	const op = "hold lock"
	if err := s.check(op); err != nil {
		return nil, err
	}
	key := LockKey(name)
	conn, err := s.lockConn(ctx, name, key)
	if err != nil {
		return nil, err
	}
	lctx, stop := context.WithCancel(context.Background())
	h := &heldLock{stop: stop, done: make(chan struct{})}
	s.locksMu.Lock()
	if s.locks == nil {
		s.locks = map[*heldLock]bool{}
	}
	s.locks[h] = true
	s.locksMu.Unlock()
	go func() {
		defer close(h.done)
		defer func() {
			if conn != nil {
				closeLockConn(conn) // ends the session, which releases the lock
			}
		}()
		tick := time.NewTicker(lockPing)
		defer tick.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-tick.C:
			}
			if conn != nil {
				pctx, cancel := context.WithTimeout(lctx, lockPing*4)
				err := conn.Ping(pctx)
				cancel()
				if err == nil || lctx.Err() != nil {
					continue
				}
				closeLockConn(conn)
				conn = nil
			}
			var err error
			if conn, err = s.lockConn(lctx, name, key); err != nil {
				conn = nil // retried at the next tick
				continue
			}
			if relocked != nil {
				relocked()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.locksMu.Lock()
			delete(s.locks, h)
			s.locksMu.Unlock()
			h.stop()
			<-h.done
		})
	}, nil
}

// lockConn connects with the pool's settings, named for lock name, and
// takes lock key.
func (s *Store) lockConn(ctx context.Context, name string, key int64) (*pgx.Conn, error) {
	const op = "hold lock"
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = s.fence.sessionName("lock " + name) // pg_stat_activity shows whose
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, translate(ctx, op, err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		closeLockConn(conn)
		return nil, translate(ctx, op, err)
	}
	if !ok {
		closeLockConn(conn)
		return nil, switchboard.Errorf(switchboard.CodeConflict, "%s: another session holds the lock", op)
	}
	return conn, nil
}

func closeLockConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// releaseLocks ends every lock HoldLock keeps (Close).
func (s *Store) releaseLocks() {
	s.locksMu.Lock()
	held := make([]*heldLock, 0, len(s.locks))
	for h := range s.locks {
		held = append(held, h)
	}
	s.locks = nil
	s.locksMu.Unlock()
	for _, h := range held {
		h.stop()
		<-h.done
	}
}

// LocksHeld reports which of names' locks some session of the database
// holds now: one read of pg_locks, whoever holds them.
func (s *Store) LocksHeld(ctx context.Context, names []string) (map[string]bool, error) {
	const op = "list locks"
	if err := s.check(op); err != nil {
		return nil, err
	}
	// A bigint advisory key shows as its high 32 bits in classid and its
	// low 32 bits in objid, with objsubid 1.
	type half struct{ hi, lo uint32 }
	want := make(map[half]string, len(names))
	for _, n := range names {
		k := uint64(LockKey(n))
		want[half{uint32(k >> 32), uint32(k)}] = n
	}
	held := make(map[string]bool, len(names))
	if len(names) == 0 {
		return held, nil
	}
	ctx, cancel := within(ctx, s.deadline())
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT classid::bigint, objid::bigint FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 1 AND granted
		  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		return nil, s.translate(ctx, op, err)
	}
	defer rows.Close()
	for rows.Next() {
		var hi, lo int64
		if err := rows.Scan(&hi, &lo); err != nil {
			return nil, s.translate(ctx, op, err)
		}
		if n, ok := want[half{uint32(hi), uint32(lo)}]; ok {
			held[n] = true
		}
	}
	if err := rows.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return nil, s.translate(ctx, op, err)
	}
	return held, nil
}
