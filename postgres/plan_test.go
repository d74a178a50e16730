package postgres_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// planQueries are the store's hot and listing queries (internal/sqlstore,
// with literal values), each with the index its plan must use. The test
// turns sequential scans off (an empty test table would otherwise be read
// whole, rightly); a plan that still reads a table sequentially has no
// index to use, which at a million calls means seconds per query. Where
// either of two indexes serves a query, they are separated by |.
var planQueries = []struct{ name, query, index string }{
	{"invocation by id", `SELECT id FROM invocations WHERE id = 'x'`, "invocations_pkey"},
	{"finish compare-and-swap", `UPDATE invocations SET status = 'succeeded' WHERE id = 'x' AND status IN ('pending', 'dispatched')`, "invocations_pkey|invocations_in_flight"},
	{"in-flight sweep", `SELECT id FROM invocations WHERE status IN ('pending', 'awaiting_approval', 'dispatched') AND id > '' ORDER BY id LIMIT 1`, "invocations_in_flight"},
	{"GET /invocations", `SELECT id FROM invocations WHERE 1 = 1 ORDER BY created_at DESC, id DESC LIMIT 100`, "invocations_by_created"},
	{"GET /invocations?run=", `SELECT id FROM invocations WHERE 1 = 1 AND run_id = 'r' ORDER BY created_at DESC, id DESC LIMIT 100`, "invocations_by_run"},
	{"ledger page", `SELECT id FROM activity WHERE id > 5 ORDER BY id LIMIT 100`, "activity_pkey"},
	{"ledger prevHash join", `SELECT a.id, p.hash FROM (SELECT id, chain, seq FROM activity WHERE id > 5 ORDER BY id LIMIT 100) a LEFT JOIN activity p ON p.chain = a.chain AND p.seq = a.seq - 1`, "activity_by_chain"},
	{"GET /activity?actor=", `SELECT id FROM activity WHERE id > 0 AND actor = 'user:a' ORDER BY id LIMIT 100`, "activity_by_actor"},
	{"GET /activity?verb=", `SELECT id FROM activity WHERE id > 0 AND verb = 'tool.call' ORDER BY id LIMIT 100`, "activity_by_verb"},
	{"GET /activity?since=: first entry", `SELECT min(+id) FROM activity WHERE ts >= now()`, "activity_by_ts"},
	{"approvals pending", `SELECT id FROM approvals WHERE 1 = 1 AND status = 'pending' ORDER BY created_at, id LIMIT 100`, "approvals_by_status"},
	{"approval of an invocation", `SELECT id FROM approvals WHERE 1 = 1 AND invocation_id = 'x' ORDER BY created_at, id LIMIT 1`, "approvals_invocation_id_key"},
	{"GET /jobs", `SELECT id FROM jobs WHERE 1 = 1 ORDER BY created_at DESC, id DESC LIMIT 100`, "jobs_by_created"},
	{"idempotency key", `SELECT digest FROM idempotency_keys WHERE scope = 's' AND key = 'k'`, "idempotency_keys_pkey"},
	{"retention: expired keys", `SELECT scope, key FROM idempotency_keys WHERE created_at < now() ORDER BY created_at LIMIT 128`, "idempotency_keys_by_created"},
	{"retention: expired records", `SELECT i.id FROM invocations i WHERE i.created_at < now() AND i.finished_at < now() AND i.status IN ('succeeded', 'failed')
		AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.invocation_id = i.id AND a.status = 'pending')
		AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.invocation_id = i.id)
		AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.status = 'running' AND j.invocation_id = i.id)
		ORDER BY i.created_at LIMIT 128`, "invocations_by_created"},
	{"retention: key names the record", `SELECT 1 FROM idempotency_keys k WHERE k.invocation_id = 'x'`, "idempotency_keys_by_invocation"},
	{"panel instances of a tab", `SELECT id, session_id, seq, version, doc, updated_at FROM panel_instances WHERE session_id = 's' ORDER BY seq, id`, "panel_instances_by_session"},
	{"run by id", `SELECT id FROM runs WHERE id = 'r'`, "runs_pkey"},
	{"run events from a position", `SELECT seq, event FROM run_events WHERE run_id = 'r' AND seq >= 5 ORDER BY seq LIMIT 1000`, "run_events_pkey"},
	{"GET /runs", `SELECT id FROM runs ORDER BY created_at DESC, id DESC LIMIT 100`, "runs_by_created"},
	{"runs sweep", `SELECT id FROM runs WHERE status = 'running' AND replica IN ('a', 'b') AND id > '' ORDER BY id LIMIT 1`, "runs_running_by_replica"},
	{"retention: expired runs", `SELECT id FROM runs WHERE status IN ('succeeded', 'failed', 'cancelled') AND finished_at < now() ORDER BY finished_at LIMIT 128`, "runs_finished"},
}

func TestQueryPlansUseIndexes(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	open(t, dsn, schema) // migrated
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize())
	must(t, err)
	// Rows and statistics, so the planner's choices are the ones a used
	// store gets (on empty tables every plan costs the same).
	_, err = conn.Exec(ctx, `INSERT INTO invocations (id, run_id, tool, status, created_at, finished_at)
		SELECT 'inv-' || g, 'run-' || g, 't', 'succeeded', now() - g * interval '1 second', now() FROM generate_series(1, 5000) g;
		INSERT INTO activity (id, ts, actor, verb, target, hash, chain, seq)
		SELECT g, now() - (5000 - g) * interval '1 second', 'user:' || (g % 7), 'v' || (g % 5), 't', '\x00', 1 + g % 3, g FROM generate_series(1, 5000) g;
		INSERT INTO runs (id, thread, replica, status, created_at, finished_at)
		SELECT 'run-' || g, 'chat-' || g, 'rep-' || (g % 3), CASE WHEN g % 50 = 0 THEN 'running' ELSE 'succeeded' END,
			now() - g * interval '1 second', CASE WHEN g % 50 = 0 THEN NULL ELSE now() END FROM generate_series(1, 5000) g;
		ANALYZE; SET enable_seqscan = off`)
	must(t, err)
	for _, q := range planQueries {
		t.Run(q.name, func(t *testing.T) {
			rows, err := conn.Query(ctx, `EXPLAIN `+q.query)
			must(t, err)
			var plan []string
			for rows.Next() {
				var line string
				must(t, rows.Scan(&line))
				plan = append(plan, line)
			}
			must(t, rows.Err())
			text := strings.Join(plan, "\n")
			if !slices.ContainsFunc(strings.Split(q.index, "|"), func(ix string) bool { return strings.Contains(text, ix) }) {
				t.Errorf("plan does not use %s:\n%s", q.index, text)
			}
			if strings.Contains(text, "Seq Scan") {
				t.Errorf("plan reads a table sequentially:\n%s", text)
			}
		})
	}
}
