package bench

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestLedgerDesigns compares, on Postgres alone, the shapes of append a
// ledger that several replicas write could take (docs/architecture.md,
// "The ledger's chains"): K appenders (one connection each, as the group
// commit leader of K replicas) commit transactions of B entries as fast as
// they can for a while, and it reports entries/s, the CPU of the
// Postgres backends per entry and their wait events (pg_stat_activity,
// every 0.5 s):
//
//   - one: today's single chain, its head row locked FOR UPDATE for the
//     whole transaction;
//   - chains: a head row per chain, the first free one taken with FOR
//     UPDATE SKIP LOCKED, ids from a sequence;
//   - chainer: appends insert into a pending table with a sequence number
//     and no lock; one chainer (a goroutine standing for the elected
//     replica) moves committed pending rows onto the chain every 50 ms.
//
// Opt in as TestReplicaScaling: name it in -run, with
// SWITCHBOARD_TEST_POSTGRES; SWITCHBOARD_BENCH_DURABILITY picks
// synchronous_commit off (process, the default) or on (power).
func TestLedgerDesigns(t *testing.T) {
	if !strings.Contains(testRunFlag(), "TestLedgerDesigns") {
		t.Skip("opt-in benchmark: name it in -run")
	}
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set SWITCHBOARD_TEST_POSTGRES")
	}
	durability := "process"
	if d := os.Getenv("SWITCHBOARD_BENCH_DURABILITY"); d != "" {
		durability = d
	}
	const batch, run = 8, 4 * time.Second
	t.Logf("%s; durability %s; %d entries a transaction, %s a block", loadAverage(), durability, batch, run)
	for round := range 2 {
		for _, k := range []int{1, 2, 3} {
			for _, design := range []string{"one", "chains", "chainer"} {
				t.Logf("designs-row: round %d | %s | %d appenders | %s", round+1, design, k, ledgerDesign(t, dsn, durability, design, k, batch, run))
			}
		}
	}
}

func ledgerDesign(t *testing.T, dsn, durability, design string, k, batch int, run time.Duration) string {
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "sbbench_ledger_" + hex.EncodeToString(b)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+ident+`; SET search_path TO `+ident+`;
		CREATE TABLE head (id int PRIMARY KEY, last_seq bigint NOT NULL, last_hash text NOT NULL);
		INSERT INTO head SELECT g, 0, '' FROM generate_series(1, 8) g;
		CREATE SEQUENCE ids;
		CREATE TABLE activity (id bigint PRIMARY KEY, chain smallint NOT NULL, seq bigint NOT NULL, ts timestamptz NOT NULL,
			actor text NOT NULL, verb text NOT NULL, target text NOT NULL, hash bytea NOT NULL);
		CREATE UNIQUE INDEX activity_by_chain ON activity (chain, seq);
		CREATE TABLE pending (n bigserial PRIMARY KEY, ts timestamptz NOT NULL, actor text NOT NULL, verb text NOT NULL, target text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(ctx, `DROP SCHEMA `+ident+` CASCADE`)
	sc := "off"
	if durability == "power" {
		sc = "on"
	}
	app := "ledgerdesign_" + hex.EncodeToString(b)
	connect := func() *pgx.Conn {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["search_path"] = schema
		cfg.RuntimeParams["synchronous_commit"] = sc
		cfg.RuntimeParams["application_name"] = app
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var conns []*pgx.Conn
	for range k + 1 {
		conns = append(conns, connect())
	}
	defer func() {
		for _, c := range conns {
			c.Close(ctx)
		}
	}()
	var pids []int
	for _, c := range conns {
		pids = append(pids, int(c.PgConn().PID()))
	}
	rctx, cancel := context.WithTimeout(ctx, run)
	defer cancel()
	var appended atomic.Int64
	var wg sync.WaitGroup
	rs := &replicaSet{admin: dsn, schema: app}
	waits := rs.sampleWaits(t)
	cpu0 := cpuOf(pids)
	start := time.Now()
	for i := range k {
		c := conns[i]
		wg.Go(func() {
			for rctx.Err() == nil {
				if err := appendBatch(rctx, c, design, i+1, batch); err != nil {
					if rctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				appended.Add(int64(batch))
			}
		})
	}
	var chained atomic.Int64
	if design == "chainer" {
		c := conns[k]
		wg.Go(func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				n, err := chainPending(rctx, c)
				if err != nil && rctx.Err() == nil {
					t.Error(err)
				}
				chained.Add(n)
				select {
				case <-rctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	cpu := cpuOf(pids) - cpu0
	n := appended.Load()
	out := fmt.Sprintf("%.0f entries/s | Postgres CPU %.0f µs an entry | waits: %s", float64(n)/wall.Seconds(), us(cpu)/float64(max(1, n)), waits())
	if design == "chainer" {
		out += fmt.Sprintf(" | chained %d of %d within the run", chained.Load(), n)
	}
	return out
}

func entryHash(prev string, id int64, target string) []byte {
	h := sha256.Sum256([]byte(prev + fmt.Sprint(id) + target))
	return h[:]
}

// appendBatch commits one transaction of batch entries the design's way.
func appendBatch(ctx context.Context, c *pgx.Conn, design string, prefer, batch int) error {
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if design == "chainer" {
			bt := &pgx.Batch{}
			for i := range batch {
				bt.Queue(`INSERT INTO pending (ts, actor, verb, target) VALUES (now(), 'bench', 'tool.call', $1)`, fmt.Sprint("t", i))
			}
			return tx.SendBatch(ctx, bt).Close()
		}
		var (
			chain int
			seq   int64
			prev  string
		)
		var err error
		if design == "one" {
			err = tx.QueryRow(ctx, `SELECT id, last_seq, last_hash FROM head WHERE id = 1 FOR UPDATE`).Scan(&chain, &seq, &prev)
		} else {
			err = tx.QueryRow(ctx, `SELECT id, last_seq, last_hash FROM head ORDER BY id < $1, id FOR UPDATE SKIP LOCKED LIMIT 1`, prefer).Scan(&chain, &seq, &prev)
		}
		if err != nil {
			return err
		}
		for i := range batch {
			var id int64
			if err := tx.QueryRow(ctx, `SELECT nextval('ids')`).Scan(&id); err != nil {
				return err
			}
			seq++
			h := entryHash(prev, id, "t")
			if _, err := tx.Exec(ctx, `INSERT INTO activity VALUES ($1, $2, $3, now(), 'bench', 'tool.call', $4, $5)`, id, chain, seq, fmt.Sprint("t", i), h); err != nil {
				return err
			}
			prev = hex.EncodeToString(h)
		}
		_, err = tx.Exec(ctx, `UPDATE head SET last_seq = $2, last_hash = $3 WHERE id = $1`, chain, seq, prev)
		return err
	})
}

// chainPending moves the committed pending rows onto chain 1, oldest
// first, in one transaction.
func chainPending(ctx context.Context, c *pgx.Conn) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		var (
			seq  int64
			prev string
		)
		if err := tx.QueryRow(ctx, `SELECT last_seq, last_hash FROM head WHERE id = 1 FOR UPDATE`).Scan(&seq, &prev); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `DELETE FROM pending WHERE n IN (SELECT n FROM pending ORDER BY n LIMIT 5000) RETURNING n, target`)
		if err != nil {
			return err
		}
		type row struct {
			n      int64
			target string
		}
		var got []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.n, &r.target); err != nil {
				return err
			}
			got = append(got, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(got) == 0 {
			return nil
		}
		ids, chains, seqs, targets, hashes := []int64{}, []int16{}, []int64{}, []string{}, [][]byte{}
		for _, r := range got {
			seq++
			h := entryHash(prev, seq, r.target)
			ids, chains, seqs, targets, hashes = append(ids, seq), append(chains, 1), append(seqs, seq), append(targets, r.target), append(hashes, h)
			prev = hex.EncodeToString(h)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO activity SELECT u.id, u.chain, u.seq, now(), 'bench', 'tool.call', u.target, u.hash
			FROM unnest($1::bigint[], $2::smallint[], $3::bigint[], $4::text[], $5::bytea[]) AS u(id, chain, seq, target, hash)`,
			ids, chains, seqs, targets, hashes); err != nil {
			return err
		}
		n = int64(len(got))
		_, err = tx.Exec(ctx, `UPDATE head SET last_seq = $1, last_hash = $2 WHERE id = 1`, seq, prev)
		return err
	})
	return n, err
}
