package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// The ledger's chains: two replicas on one Postgres append at once, each
// on a chain of its own, and the ledger still verifies and still shows an
// edit, a deletion and a cut tail of either chain.

// replicaPair is two stores (replicas) on one fresh schema, their ledgers
// and a connection for tampering.
type replicaPair struct {
	schema string
	stores [2]*Store
	ledger [2]*activity.Ledger
	raw    *pgx.Conn
}

func freshChainsSchema(t *testing.T) (dsn, schema string, raw *pgx.Conn) {
	t.Helper()
	dsn = os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("SWITCHBOARD_TEST_POSTGRES is not set")
	}
	ctx := context.Background()
	schema = fmt.Sprintf("sbtest_chains_%d", time.Now().UnixNano())
	cfg, err := pgx.ParseConfig(dsn)
	mustNot(t, err)
	raw, err = pgx.ConnectConfig(ctx, cfg)
	mustNot(t, err)
	_, err = raw.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()+"; SET search_path TO "+pgx.Identifier{schema}.Sanitize())
	mustNot(t, err)
	t.Cleanup(func() {
		_, _ = raw.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		raw.Close(ctx)
	})
	return dsn, schema, raw
}

// openPair opens the two replicas; replica i prefers chain i+1.
func openPair(t *testing.T, dsn, schema string, raw *pgx.Conn) *replicaPair {
	t.Helper()
	ctx := context.Background()
	p := &replicaPair{schema: schema, raw: raw}
	for i := range p.stores {
		s, err := Open(ctx, dsn, &Options{Schema: schema, MaxConns: 4})
		mustNot(t, err)
		t.Cleanup(func() { s.Close() })
		s.chain = i + 1
		p.stores[i] = s
		p.ledger[i], err = activity.New(ctx, s, nil)
		mustNot(t, err)
	}
	return p
}

// appendConcurrently has each replica append n entries from four
// goroutines at once, so that both replicas batch and append together.
func (p *replicaPair) appendConcurrently(t *testing.T, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for r := range p.ledger {
		for g := range 4 {
			wg.Go(func() {
				for i := g; i < n; i += 4 {
					errs <- p.ledger[r].Append(context.Background(), &switchboard.ActivityEntry{
						Actor: fmt.Sprintf("replica:%d", r), Verb: "test.note", Target: fmt.Sprintf("note-%d-%d", r, i)})
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		mustNot(t, err)
	}
}

// chainOf lists chain c's entries by position.
func (p *replicaPair) chainOf(t *testing.T, c int) []switchboard.ActivityEntry {
	t.Helper()
	all, err := p.stores[0].ActivityList(context.Background(), switchboard.ActivityFilter{Limit: 1000})
	mustNot(t, err)
	var out []switchboard.ActivityEntry
	for _, e := range all {
		if ec, _ := e.Position(); ec == c {
			out = append(out, e)
		}
	}
	return out
}

func (p *replicaPair) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := p.raw.Exec(context.Background(), sql, args...)
	mustNot(t, err)
}

func TestLedgerChainsTwoReplicas(t *testing.T) {
	const n = 24
	setup := func(t *testing.T) (*replicaPair, switchboard.LedgerCheckpoint) {
		dsn, schema, raw := freshChainsSchema(t)
		p := openPair(t, dsn, schema, raw)
		p.appendConcurrently(t, n)
		for c := 1; c <= 2; c++ {
			if got := len(p.chainOf(t, c)); got != n {
				t.Fatalf("chain %d holds %d entries, want replica %d's %d", c, got, c-1, n)
			}
		}
		for i, l := range p.ledger {
			if r, err := l.Verify(context.Background()); err != nil || !r.OK || r.Entries != 2*n || len(r.Chains) != 2 {
				t.Fatalf("replica %d verifies the untouched ledger: %+v %v", i, r, err)
			}
		}
		cp, err := p.ledger[0].Checkpoint(context.Background())
		mustNot(t, err)
		if len(cp.Chains) != 2 || cp.MAC == "" {
			t.Fatalf("checkpoint over both chains: %+v", cp)
		}
		if r, err := p.ledger[0].VerifyCheckpoint(context.Background(), cp); err != nil || !r.OK {
			t.Fatalf("the checkpoint on the untouched ledger: %+v %v", r, err)
		}
		return p, cp
	}
	for c := 1; c <= 2; c++ {
		t.Run(fmt.Sprintf("edit on chain %d", c), func(t *testing.T) {
			p, _ := setup(t)
			e := p.chainOf(t, c)[5]
			p.exec(t, `UPDATE activity SET target = 'forged' WHERE id = $1`, e.ID)
			for i, l := range p.ledger {
				r, err := l.Verify(context.Background())
				mustNot(t, err)
				if r.OK || r.BadID != e.ID || !strings.Contains(r.Problem, "edited") {
					t.Fatalf("replica %d after an edit of entry %d: %+v", i, e.ID, r)
				}
			}
		})
		t.Run(fmt.Sprintf("deletion on chain %d", c), func(t *testing.T) {
			p, _ := setup(t)
			gone := p.chainOf(t, c)[5]
			p.exec(t, `DELETE FROM activity WHERE id = $1`, gone.ID)
			for i, l := range p.ledger {
				r, err := l.Verify(context.Background())
				mustNot(t, err)
				if r.OK || !strings.Contains(r.Problem, "missing") || !strings.Contains(r.Problem, "deleted") {
					t.Fatalf("replica %d after entry %d was deleted: %+v", i, gone.ID, r)
				}
			}
		})
		t.Run(fmt.Sprintf("cut tail of chain %d", c), func(t *testing.T) {
			p, cp := setup(t)
			// The tamperer deletes the chain's last three entries and moves
			// its head back, as one who wanted the cut unseen would.
			p.exec(t, `DELETE FROM activity WHERE chain = $1 AND seq > $2`, c, n-3)
			last := p.chainOf(t, c)[n-4]
			p.exec(t, `UPDATE activity_head SET last_id = $2, last_hash = $3 WHERE id = $1`, c, n-3, last.Hash)
			// The chain is intact as far as it goes: only a checkpoint
			// shows the cut. The operator's names every chain's head; each
			// replica's own names the chain it appended to.
			r, err := p.ledger[0].VerifyCheckpoint(context.Background(), cp) // the signer: keys are per data root
			mustNot(t, err)
			if r.OK || r.Missing == nil || !strings.Contains(r.Problem, "missing") {
				t.Fatalf("the operator's checkpoint after chain %d was cut: %+v", c, r)
			}
			r, err = p.ledger[c-1].Verify(context.Background())
			mustNot(t, err)
			if r.OK || r.Missing == nil || !strings.Contains(r.Problem, "deleted") {
				t.Fatalf("replica %d's own checkpoint after its chain %d was cut: %+v", c-1, c, r)
			}
		})
	}
}

// An existing ledger (one chain, written before chains existed) migrates:
// it verifies, a checkpoint taken before still holds, and replicas append
// on chains again, the first continuing it.
func TestLedgerChainsMigration(t *testing.T) {
	dsn, schema, raw := freshChainsSchema(t)
	ctx := context.Background()
	// The schema as it was before migration 0047.
	before := fstest.MapFS{}
	mustNot(t, fs.WalkDir(migrations, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path >= "0047" {
			return err
		}
		b, err := fs.ReadFile(migrations, path)
		before[path] = &fstest.MapFile{Data: b}
		return err
	}))
	tx, err := raw.Begin(ctx)
	mustNot(t, err)
	mustNot(t, migrateWith(ctx, tx, before))
	mustNot(t, tx.Commit(ctx))
	// Entries as the single-chain driver appended them: id = position,
	// the head row moved along.
	prev := ""
	var hashes []string
	for id := int64(1); id <= 6; id++ {
		e := switchboard.ActivityEntry{ID: id, Ts: time.Now().UTC().Truncate(time.Microsecond), Actor: "old", Verb: "test.note", Target: fmt.Sprintf("old-%d", id)}
		e.Hash = e.ComputeHash(prev)
		b, _ := hex.DecodeString(e.Hash)
		_, err := raw.Exec(ctx, `INSERT INTO activity (id, ts, actor, verb, target, hash) VALUES ($1, $2, $3, $4, $5, $6);
			`, e.ID, e.Ts, e.Actor, e.Verb, e.Target, b)
		mustNot(t, err)
		_, err = raw.Exec(ctx, `UPDATE activity_head SET last_id = $1, last_hash = $2 WHERE id = 1`, e.ID, e.Hash)
		mustNot(t, err)
		prev = e.Hash
		hashes = append(hashes, e.Hash)
	}
	dir := t.TempDir()
	anchor, err := activity.OpenAnchor(dir, nil)
	mustNot(t, err)
	old := anchor.Sign(switchboard.LedgerCheckpoint{Seq: 6, Hash: hashes[5], Ts: time.Now().UTC().Truncate(time.Microsecond)})

	p := openPair(t, dsn, schema, raw) // Open applies 0047
	l, err := activity.New(ctx, p.stores[0], &activity.Options{Anchor: anchor})
	mustNot(t, err)
	for _, check := range []func() (activity.Report, error){
		func() (activity.Report, error) { return l.Verify(ctx) },
		func() (activity.Report, error) { return l.VerifyCheckpoint(ctx, old) },
	} {
		if r, err := check(); err != nil || !r.OK || r.Entries != 6 || r.HeadID != 6 || len(r.Chains) != 0 {
			t.Fatalf("the migrated ledger: %+v %v", r, err)
		}
	}
	p.appendConcurrently(t, 8)
	c1 := p.chainOf(t, 1)
	if len(c1) != 6+8 || c1[6].PrevHash != hashes[5] {
		t.Fatalf("chain 1 after the migration: %d entries, the first new one after %.12s", len(c1), c1[6].PrevHash)
	}
	if r, err := l.VerifyCheckpoint(ctx, old); err != nil || !r.OK || r.Entries != 6+16 || len(r.Chains) != 2 {
		t.Fatalf("the migrated ledger with new entries on two chains: %+v %v", r, err)
	}
	// An edit of an entry written before the migration still shows.
	_, err = raw.Exec(ctx, `UPDATE activity SET target = 'forged' WHERE id = 3`)
	mustNot(t, err)
	if r, err := l.Verify(ctx); err != nil || r.OK || r.BadID != 3 {
		t.Fatalf("an edit of a migrated entry: %+v %v", r, err)
	}
}

// migrateWith applies the migrations in fsys, as Open does, on tx.
func migrateWith(ctx context.Context, tx pgx.Tx, fsys fs.FS) error {
	return sqlstore.Migrate(ctx, conn{q: tx}, dialect, fsys, time.Now())
}

func mustNot(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
