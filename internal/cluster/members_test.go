package cluster_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/postgres"
	"github.com/switchboardhq/switchboard/sqlite"
)

// pgStores opens n stores (replicas) on one fresh schema, or skips.
func pgStores(t *testing.T, n int) (string, []*postgres.Store) {
	t.Helper()
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("presence locks need Postgres: set SWITCHBOARD_TEST_POSTGRES")
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	schema := "sbcluster_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx := context.Background()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(ctx)
		}
	})
	var out []*postgres.Store
	for range n {
		st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: schema, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		out = append(out, st)
	}
	return dsn, out
}

// takeovers records the replicas a Members took over.
type takeovers struct {
	mu  sync.Mutex
	ids []string
}

func (k *takeovers) fn(ctx context.Context, id string, owners map[string]bool) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ids = append(k.ids, id)
	return nil
}

func (k *takeovers) list() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.ids...)
}

func start(t *testing.T, o cluster.MembersOptions) *cluster.Members {
	t.Helper()
	m, err := cluster.NewMembers(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	return m
}

func within(t *testing.T, d time.Duration, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not within %s", what, d)
	}
}

// A replica whose process dies (here: its store closes, which ends the
// presence lock's session as a killed process's would) is claimed by the
// lock rule although its heartbeat timeout is an hour, and Gone closes; a
// replica whose lock connection is cut but comes back at once is not.
func TestPresenceLockFindsTheDead(t *testing.T) {
	dsn, sts := pgStores(t, 3)
	ctx := context.Background()
	slow := cluster.MembersOptions{Heartbeat: 2 * time.Second, Timeout: time.Hour}

	var seen takeovers
	o := slow
	o.Store, o.Name, o.TakeOver = sts[0], "survivor", seen.fn
	survivor := start(t, o)
	o = slow
	o.Store, o.Name = sts[1], "dies"
	dies := start(t, o)
	o.Store, o.Name, o.TakeOver = sts[2], "blips", seen.fn // either survivor may win the claim
	blips := start(t, o)

	if got := survivor.Gone(survivor.Self()); isClosed(got) {
		t.Fatal("Gone(self) is closed")
	}
	unknown := survivor.Gone("rep_nobody")
	within(t, 10*time.Second, "Gone of an unregistered replica", unknown)

	// The blip: the lock's backend is terminated; its holder reconnects
	// and retakes it at once.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Wait until the survivor has seen both locks held (its first rounds).
	time.Sleep(2 * time.Second)
	held, err := sts[0].LocksHeld(ctx, []string{dies.Self(), blips.Self()})
	if err != nil {
		t.Fatal(err)
	}
	if !held[dies.Self()] || !held[blips.Self()] {
		t.Fatalf("presence locks held: %v, want both", held)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM unnest($1::int[]) AS pid`,
		lockPIDs(t, conn, blips.Self())).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("terminated %d backends, want the blipping replica's lock", n)
	}

	// The death: the store (with its lock's session) goes, no Release.
	dies.Stop()
	sts[1].Close()
	within(t, 30*time.Second, "Gone of the dead replica", survivor.Gone(dies.Self()))
	// Gone closes at the claim, before the takeover runs.
	for deadline := time.Now().Add(10 * time.Second); len(seen.list()) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := seen.list(); len(got) != 1 || got[0] != dies.Self() {
		t.Fatalf("took over %v, want the dead replica %s once", got, dies.Self())
	}
	// Its lock was retaken: two more probes later it is still alive.
	time.Sleep(3 * cluster.DefaultProbe)
	if isClosed(survivor.Gone(blips.Self())) || isClosed(blips.Lost()) {
		t.Fatal("a replica whose lock connection blipped was taken for dead")
	}
	if held, err := sts[0].LocksHeld(ctx, []string{blips.Self()}); err != nil || !held[blips.Self()] {
		t.Fatalf("the blipping replica's lock is not held again: %v %v", held, err)
	}
	if got := seen.list(); len(got) != 1 {
		t.Fatalf("took over %v, want just the dead replica", got)
	}
}

// lockPIDs is the backend holding name's presence lock.
func lockPIDs(t *testing.T, conn *pgx.Conn, name string) []int32 {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT pid, classid::bigint, objid::bigint FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 1 AND granted`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int32
	for rows.Next() {
		var pid int32
		var hi, lo int64
		if err := rows.Scan(&pid, &hi, &lo); err != nil {
			t.Fatal(err)
		}
		if uint64(hi)<<32|uint64(uint32(lo)) == uint64(postgres.LockKey(name)) {
			out = append(out, pid)
		}
	}
	return out
}

// Without the lock (NoLock) the same death waits for the heartbeat
// timeout: with an hour's timeout, nobody claims it.
func TestWithoutPresenceLockTheDeadWaitForTheTimeout(t *testing.T) {
	_, sts := pgStores(t, 2)
	slow := cluster.MembersOptions{Heartbeat: 2 * time.Second, Timeout: time.Hour, NoLock: true}
	var seen takeovers
	o := slow
	o.Store, o.Name, o.TakeOver = sts[0], "survivor", seen.fn
	survivor := start(t, o)
	o = slow
	o.Store, o.Name = sts[1], "dies"
	dies := start(t, o)
	time.Sleep(2 * time.Second)
	dies.Stop()
	sts[1].Close()
	time.Sleep(4 * cluster.DefaultProbe)
	if isClosed(survivor.Gone(dies.Self())) || len(seen.list()) != 0 {
		t.Fatal("a replica was claimed without a presence lock before its heartbeat timeout")
	}
}

// On SQLite (no locks) the heartbeat path claims a replica whose beats
// stood still, and a clean stop at once.
func TestHeartbeatPathOnSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db")
	open := func() switchboard.Store {
		st, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	fast := cluster.MembersOptions{Heartbeat: 20 * time.Millisecond, Timeout: 500 * time.Millisecond}
	var seen takeovers
	o := fast
	o.Store, o.Name, o.TakeOver = open(), "survivor", seen.fn
	survivor := start(t, o)
	o = fast
	o.Store, o.Name = open(), "hangs"
	hangs := start(t, o)
	o.Name = "stops"
	stops := start(t, o)
	hangs.Stop() // its beats stand still
	within(t, 30*time.Second, "Gone of a replica whose beats stopped", survivor.Gone(hangs.Self()))
	stops.Stop()
	if err := stops.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	within(t, 30*time.Second, "Gone of a replica that stopped", survivor.Gone(stops.Self()))
	for deadline := time.Now().Add(10 * time.Second); len(seen.list()) < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := seen.list(); len(got) != 2 {
		t.Fatalf("took over %v, want both", got)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// When the replicas' presence-lock connections all drop and cannot come
// back for a while (the database refuses new connections, as at
// max_connections) while their pooled connections keep working, every
// lock reads free: no replica may take the others for dead, or each
// claims the others and the whole fleet stops. A replica judges the
// others by their locks only while it sees its own held.
func TestLockOutageIsNotADeath(t *testing.T) {
	ctx := context.Background()
	admin, db, own := ownDatabase(t)
	ident := pgx.Identifier{db}.Sanitize()
	var seen takeovers
	var ms []*cluster.Members
	for i := range 3 {
		st, err := postgres.Open(ctx, own, &postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		ms = append(ms, start(t, cluster.MembersOptions{Store: st, Name: fmt.Sprint("r", i), Heartbeat: 2 * time.Second,
			Timeout: time.Hour, TakeOver: seen.fn}))
	}
	time.Sleep(2 * cluster.DefaultProbe) // each has seen the others' locks held

	if _, err := admin.Exec(ctx, `ALTER DATABASE `+ident+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 1 AND granted
		  AND database = (SELECT oid FROM pg_database WHERE datname = $1)`, db).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("ended %d lock sessions, want the 3 replicas'", n)
	}
	time.Sleep(4 * cluster.DefaultProbe) // every lock free, the pools still up
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+ident+` ALLOW_CONNECTIONS true`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * cluster.DefaultProbe) // locks retaken, one after another
	for i, m := range ms {
		if isClosed(m.Lost()) {
			t.Errorf("replica %d was claimed while it ran", i)
		}
	}
	if got := seen.list(); len(got) != 0 {
		t.Errorf("took over %v: live replicas taken for dead", got)
	}
}

// ownDatabase creates a database of the test's own (dropped at its end),
// so that it can refuse new connections (ALLOW_CONNECTIONS false, which
// binds superusers too) without touching anyone else's: an admin
// connection to the server's database, the new database's name and a DSN
// naming it. It skips without Postgres.
func ownDatabase(t *testing.T) (*pgx.Conn, string, string) {
	t.Helper()
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("presence locks need Postgres: set SWITCHBOARD_TEST_POSTGRES")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	db := "sbcluster_" + hex.EncodeToString(b)
	ident := pgx.Identifier{db}.Sanitize()
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+ident); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = c.Exec(ctx, `ALTER DATABASE `+ident+` ALLOW_CONNECTIONS true`)
			_, _ = c.Exec(ctx, `DROP DATABASE IF EXISTS `+ident+` WITH (FORCE)`)
			c.Close(ctx)
		}
	})
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	own := strings.Replace(dsn, "/"+cfg.Database+"?", "/"+db+"?", 1)
	if own == dsn {
		t.Skipf("cannot name another database in %s", dsn)
	}
	return admin, db, own
}

// A database outage longer than the replica timeout stops every replica's
// beats, as it stops the watchers' reads: beats that stood still while
// nobody could read them are no sign of death. When the database is back,
// no live replica may be claimed.
func TestOutagePastTheTimeoutIsNotADeath(t *testing.T) {
	ctx := context.Background()
	admin, db, own := ownDatabase(t)
	ident := pgx.Identifier{db}.Sanitize()
	var seen takeovers
	var ms []*cluster.Members
	for i := range 3 {
		st, err := postgres.Open(ctx, own, &postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		// Probes more often than beats, as by default (1 s and 5 s).
		ms = append(ms, start(t, cluster.MembersOptions{Store: st, Name: fmt.Sprint("r", i), Heartbeat: 2 * time.Second,
			Timeout: 4 * time.Second, Probe: 100 * time.Millisecond, TakeOver: seen.fn}))
	}
	time.Sleep(3 * time.Second) // each has seen the others beat

	if _, err := admin.Exec(ctx, `ALTER DATABASE `+ident+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, db); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second) // past the timeout without a beat or a read
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+ident+` ALLOW_CONNECTIONS true`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // everyone back and beating
	for i, m := range ms {
		if isClosed(m.Lost()) {
			t.Errorf("replica %d was claimed while it ran", i)
		}
	}
	if got := seen.list(); len(got) != 0 {
		t.Errorf("took over %v: live replicas taken for dead", got)
	}
}

// A replica that claimed another and died before cutting it off leaves
// that claim to whoever claims it: the sweep resolves both, so both must
// be cut off first. Here B is paused (its watch stopped, its store and
// lock still open), A claims B and dies before its cut-off, and C claims
// A: once C's takeover has run, none of B's sessions may be left, or B
// writes on them when it resumes, after its work was resolved.
func TestTakeoverCutsOffWhatTheDeadHadClaimed(t *testing.T) {
	dsn, sts := pgStores(t, 3)
	ctx := context.Background()
	slow := cluster.MembersOptions{Heartbeat: 2 * time.Second, Timeout: time.Hour}
	o := slow
	o.Store, o.Name = sts[0], "paused"
	b := start(t, o)
	o.Store, o.Name = sts[1], "claimer"
	a := start(t, o)
	// B's pool has sessions open, as a busy replica's has.
	for range 3 {
		if _, err := sts[0].ReplicaList(ctx); err != nil {
			t.Fatal(err)
		}
	}
	b.Stop() // paused: no beats, its sessions and lock kept

	list, err := sts[1].ReplicaList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list {
		if r.ID == b.Self() {
			if _, err := sts[1].ReplicaClaim(ctx, b.Self(), a.Self(), r.Beats, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	a.Stop()
	sts[1].Close() // A dies between its claim and its cut-off

	var seen takeovers
	o.Store, o.Name, o.TakeOver = sts[2], "survivor", seen.fn
	c := start(t, o)
	within(t, 30*time.Second, "the dead claimer is found", c.Gone(a.Self()))
	// The cut-offs run before TakeOver is called.
	for deadline := time.Now().Add(20 * time.Second); len(seen.list()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the dead claimer was not taken over")
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE right(application_name, $2) = $1`,
		" "+b.Self(), len(b.Self())+1).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left > 0 {
		t.Errorf("%d sessions of the paused replica are left after its work was resolved", left)
	}
	if _, err := sts[0].ReplicaList(ctx); err == nil {
		t.Error("the paused replica still reads the store after its work was resolved")
	}
}
