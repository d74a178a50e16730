package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/storetest"
	"github.com/switchboardhq/switchboard/sqlite"
)

func open(t *testing.T, path string, opts *sqlite.Options) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformanceFile(t *testing.T) {
	storetest.Exercise(t, func(t *testing.T) switchboard.Store {
		return open(t, filepath.Join(t.TempDir(), "switchboard.db"), nil)
	})
}

func TestConformanceMemory(t *testing.T) {
	storetest.Exercise(t, func(t *testing.T) switchboard.Store {
		return open(t, sqlite.Memory, nil)
	})
}

// TestDurability: everything acknowledged before Close is there after
// reopening, the chain still verifies and continues, and migrations are not
// applied twice.
func TestDurability(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	tool := switchboard.Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}
	must(t, s.ToolPut(ctx, switchboard.SourceCore, []switchboard.Tool{tool}))
	inv := switchboard.Invocation{ID: "inv-1", Tool: "a", Status: switchboard.StatusPending, CreatedAt: time.Now()}
	must(t, s.InvocationCreate(ctx, inv))
	first := &switchboard.ActivityEntry{Actor: "alice", Verb: "v", Details: json.RawMessage(`{"k": 1}`)}
	must(t, s.ActivityAppend(ctx, first))
	must(t, s.Close())

	s = open(t, path, nil)
	if rev, err := s.CatalogRevision(ctx); err != nil || rev != 1 {
		t.Fatalf("revision after reopen = %d, %v; want 1", rev, err)
	}
	if tools, err := s.ToolList(ctx); err != nil || len(tools) != 1 || tools[0].Name != "a" {
		t.Fatalf("tools after reopen = %v, %v", tools, err)
	}
	if got, err := s.InvocationGet(ctx, "inv-1"); err != nil || got.Status != switchboard.StatusPending {
		t.Fatalf("invocation after reopen = %+v, %v", got, err)
	}
	second := &switchboard.ActivityEntry{Actor: "bob", Verb: "v"}
	must(t, s.ActivityAppend(ctx, second))
	if second.ID != first.ID+1 || second.PrevHash != first.Hash {
		t.Fatalf("chain did not continue across reopen: %+v after %+v", second, first)
	}
	entries, err := s.ActivityList(ctx, switchboard.ActivityFilter{})
	must(t, err)
	if len(entries) != 2 || entries[0].Hash != entries[0].ComputeHash("") ||
		entries[1].Hash != entries[1].ComputeHash(entries[0].Hash) {
		t.Fatalf("chain does not verify after reopen: %+v", entries)
	}
	if n := count(t, path, `SELECT count(*) FROM schema_migrations`); n != migrationFiles(t) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, migrationFiles(t))
	}
}

// TestConcurrentOpen: two stores opening one new file at once both succeed
// and apply each migration once.
func TestConcurrentOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.db")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			s, err := sqlite.Open(context.Background(), path, nil)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		must(t, err)
	}
	if n := count(t, path, `SELECT count(*) FROM schema_migrations`); n != migrationFiles(t) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, migrationFiles(t))
	}
}

// TestNewerSchemaRefused: an old binary does not write to a schema it does
// not know.
func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.db")
	must(t, open(t, path, nil).Close())
	db := raw(t, path)
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(context.Background(), path, nil)
	if switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("open of a newer schema: %v, want UNAVAILABLE", err)
	}
}

// TestBusy: a write lock held by another process turns into UNAVAILABLE,
// nothing is half-written, reads still work, and a retry succeeds.
func TestBusy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	s := open(t, path, &sqlite.Options{BusyTimeout: time.Millisecond})
	other, err := raw(t, path).Conn(ctx)
	must(t, err)
	defer other.Close()
	if _, err := other.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	tool := switchboard.Tool{Name: "a", InputSchema: json.RawMessage(`{}`)}
	err = s.ToolPut(ctx, switchboard.SourceCore, []switchboard.Tool{tool})
	if switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("ToolPut under a foreign write lock: %v, want UNAVAILABLE", err)
	}
	err = s.ActivityAppend(ctx, &switchboard.ActivityEntry{Actor: "a", Verb: "v"})
	if switchboard.CodeOf(err) != switchboard.CodeUnavailable {
		t.Fatalf("ActivityAppend under a foreign write lock: %v, want UNAVAILABLE", err)
	}
	if rev, err := s.CatalogRevision(ctx); err != nil || rev != 0 {
		t.Fatalf("read under a foreign write lock = %d, %v; want 0, nil", rev, err)
	}
	if _, err := other.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	must(t, s.ToolPut(ctx, switchboard.SourceCore, []switchboard.Tool{tool}))
	if rev, err := s.CatalogRevision(ctx); err != nil || rev != 1 {
		t.Fatalf("revision after retry = %d, %v; want 1", rev, err)
	}
}

func TestOpenRejectsEmptyPath(t *testing.T) {
	_, err := sqlite.Open(context.Background(), "", nil)
	if switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("Open(\"\") = %v, want INVALID_INPUT", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// raw opens the file behind the store's back, as another process would.
func raw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	must(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, path, query string) int {
	t.Helper()
	var n int
	must(t, raw(t, path).QueryRow(query).Scan(&n))
	return n
}

func migrationFiles(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("migrations/*.sql")
	must(t, err)
	return len(files)
}

// TestChainHeadCacheStale: an entry appended behind the store's back (as a
// second process would) does not fork the chain: the store's cached head
// is stale, the insert collides, and the append reads the real head.
func TestChainHeadCacheStale(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	s := open(t, path, nil)
	first := &switchboard.ActivityEntry{Actor: "alice", Verb: "v", Target: "first"}
	must(t, s.ActivityAppend(ctx, first)) // caches the head

	other := switchboard.ActivityEntry{ID: first.ID + 1, Ts: time.Now().Truncate(time.Microsecond).UTC(),
		Actor: "bob", Verb: "v", Target: "behind the back", PrevHash: first.Hash}
	other.Hash = other.ComputeHash(first.Hash)
	if _, err := raw(t, path).Exec(`INSERT INTO activity (id, ts, actor, verb, target, hash)
		VALUES (?, ?, ?, ?, ?, unhex(?))`, other.ID, other.Ts.UnixMicro(), other.Actor, other.Verb, other.Target,
		other.Hash); err != nil {
		t.Fatal(err)
	}

	third := &switchboard.ActivityEntry{Actor: "alice", Verb: "v", Target: "third"}
	must(t, s.ActivityAppend(ctx, third))
	if third.ID != other.ID+1 || third.PrevHash != other.Hash {
		t.Fatalf("append after a foreign one got id %d prevHash %q; want %d after %q", third.ID, third.PrevHash, other.ID+1, other.Hash)
	}
	// The same through InvocationFinish.
	inv := switchboard.Invocation{ID: "inv-1", Tool: "a", Status: switchboard.StatusDispatched}
	must(t, s.InvocationCreate(ctx, inv))
	fourth := other
	fourth.ID, fourth.PrevHash, fourth.Target = third.ID+1, third.Hash, "behind the back again"
	fourth.Hash = fourth.ComputeHash(third.Hash)
	if _, err := raw(t, path).Exec(`INSERT INTO activity (id, ts, actor, verb, target, hash)
		VALUES (?, ?, ?, ?, ?, unhex(?))`, fourth.ID, fourth.Ts.UnixMicro(), fourth.Actor, fourth.Verb, fourth.Target,
		fourth.Hash); err != nil {
		t.Fatal(err)
	}
	inv.Status = switchboard.StatusSucceeded
	fifth := &switchboard.ActivityEntry{Actor: "alice", Verb: "tool.call", Target: "a"}
	if _, err := s.InvocationFinish(ctx, inv, fifth, switchboard.InFlight...); err != nil {
		t.Fatal(err)
	}
	if fifth.PrevHash != fourth.Hash {
		t.Fatalf("finish after a foreign append chained to %q, want %q", fifth.PrevHash, fourth.Hash)
	}
	entries, err := s.ActivityList(ctx, switchboard.ActivityFilter{})
	must(t, err)
	prev := ""
	for _, e := range entries {
		if e.PrevHash != prev || e.Hash != e.ComputeHash(prev) {
			t.Fatalf("chain broken at entry %d", e.ID)
		}
		prev = e.Hash
	}
	if len(entries) != 5 {
		t.Fatalf("ledger has %d entries, want 5", len(entries))
	}
}

// TestCloseReleasesFile: Close finalizes the writer's cached statements;
// SQLite would otherwise keep the connection (and its lock on the file)
// open. Leaving WAL mode needs every other connection gone.
func TestCloseReleasesFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	s := open(t, path, nil)
	inv := switchboard.Invocation{ID: "inv-1", Tool: "a", Status: switchboard.StatusDispatched}
	must(t, s.InvocationCreate(ctx, inv))
	inv.Status = switchboard.StatusSucceeded
	if _, err := s.InvocationFinish(ctx, inv, &switchboard.ActivityEntry{Actor: "a", Verb: "v"}, switchboard.InFlight...); err != nil {
		t.Fatal(err)
	}
	must(t, s.Close())
	var mode string
	if err := raw(t, path).QueryRow(`PRAGMA journal_mode=DELETE`).Scan(&mode); err != nil || mode != "delete" {
		t.Fatalf("leaving WAL mode after Close: mode %q, %v; a connection is still open", mode, err)
	}
}

// TestCloseDuringWrites: Close while writers are busy ends every later
// write with UNAVAILABLE, and still releases the file.
func TestCloseDuringWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	s, err := sqlite.Open(ctx, path, nil)
	must(t, err)
	var (
		wg      sync.WaitGroup
		started = make(chan struct{}, 8)
		errs    = make(chan error, 8)
	)
	for range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				err := s.ActivityAppend(ctx, &switchboard.ActivityEntry{Actor: "a", Verb: "v"})
				if err != nil {
					errs <- err
					return
				}
				if i == 0 {
					started <- struct{}{}
				}
			}
		})
	}
	<-started
	must(t, s.Close())
	wg.Wait()
	close(errs)
	for err := range errs {
		if switchboard.CodeOf(err) != switchboard.CodeUnavailable {
			t.Fatalf("write after Close: %v, want UNAVAILABLE", err)
		}
	}
	var mode string
	if err := raw(t, path).QueryRow(`PRAGMA journal_mode=DELETE`).Scan(&mode); err != nil || mode != "delete" {
		t.Fatalf("leaving WAL mode after Close: mode %q, %v; a connection is still open", mode, err)
	}
}
