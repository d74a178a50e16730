package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// planQueries are the store's hot and listing queries (internal/sqlstore,
// with literal values), each with the index its plan must use. A plan that
// scans a whole table (SCAN t, not SEARCH t) fails: at a million calls
// that is the difference between microseconds and seconds. Migration 0022
// dropped the indexes no query needs; this is what the remaining ones are
// for.
var planQueries = []struct{ name, query, index string }{
	{"invocation by id", `SELECT id FROM invocations WHERE id = 'x'`, "sqlite_autoindex_invocations_1"},
	{"finish compare-and-swap", `UPDATE invocations SET status = 'succeeded' WHERE id = 'x' AND status IN ('pending', 'dispatched')`, "sqlite_autoindex_invocations_1"},
	{"in-flight sweep", `SELECT id FROM invocations WHERE status IN ('pending', 'awaiting_approval', 'dispatched') AND id > '' ORDER BY id LIMIT 1`, "invocations_in_flight"},
	{"GET /invocations", `SELECT id FROM invocations WHERE 1 = 1 ORDER BY created_at DESC, id DESC LIMIT 100`, "invocations_by_created"},
	{"GET /invocations?run=", `SELECT id FROM invocations WHERE 1 = 1 AND run_id = 'r' ORDER BY created_at DESC, id DESC LIMIT 100`, "invocations_by_run"},
	{"ledger page", `SELECT id FROM activity WHERE id > 5 ORDER BY id LIMIT 100`, "INTEGER PRIMARY KEY"},
	{"ledger prevHash join", `SELECT a.id, p.hash FROM (SELECT id FROM activity WHERE id > 5 ORDER BY id LIMIT 100) a LEFT JOIN activity p ON p.id = a.id - 1`, "INTEGER PRIMARY KEY"},
	{"GET /activity?actor=", `SELECT id FROM activity WHERE id > 0 AND actor = 'user:a' ORDER BY id LIMIT 100`, "activity_by_actor"},
	{"GET /activity?verb=", `SELECT id FROM activity WHERE id > 0 AND verb = 'tool.call' ORDER BY id LIMIT 100`, "activity_by_verb"},
	{"GET /activity?since=: first entry", `SELECT min(+id) FROM activity WHERE ts >= 5`, "activity_by_ts"},
	{"approvals pending", `SELECT id FROM approvals WHERE 1 = 1 AND status = 'pending' ORDER BY created_at, id LIMIT 100`, "approvals_by_status"},
	{"approval of an invocation", `SELECT id FROM approvals WHERE 1 = 1 AND invocation_id = 'x' ORDER BY created_at, id LIMIT 1`, "sqlite_autoindex_approvals_2"},
	{"GET /jobs", `SELECT id FROM jobs WHERE 1 = 1 ORDER BY created_at DESC, id DESC LIMIT 100`, "jobs_by_created"},
	{"idempotency key", `SELECT digest FROM idempotency_keys WHERE scope = 's' AND key = 'k'`, "sqlite_autoindex_idempotency_keys_1"},
	{"retention: expired keys", `SELECT scope, key FROM idempotency_keys WHERE created_at < 5 ORDER BY created_at LIMIT 128`, "idempotency_keys_by_created"},
	{"retention: expired records", `SELECT i.id FROM invocations i WHERE i.created_at < 5 AND i.finished_at < 5 AND i.status IN ('succeeded', 'failed')
		AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.invocation_id = i.id AND a.status = 'pending')
		AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.invocation_id = i.id)
		AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.status = 'running' AND j.invocation_id = i.id)
		ORDER BY i.created_at LIMIT 128`, "invocations_by_created"},
	{"retention: key names the record", `SELECT 1 FROM idempotency_keys k WHERE k.invocation_id = 'x'`, "idempotency_keys_by_invocation"},
	{"panel instances of a tab", `SELECT id, session_id, seq, version, doc, updated_at FROM panel_instances WHERE session_id = 's' ORDER BY seq, id`, "panel_instances_by_session"},
	{"run by id", `SELECT id FROM runs WHERE id = 'r'`, "sqlite_autoindex_runs_1"},
	{"run events from a position", `SELECT seq, event FROM run_events WHERE run_id = 'r' AND seq >= 5 ORDER BY seq LIMIT 1000`, "sqlite_autoindex_run_events_1"},
	{"GET /runs", `SELECT id FROM runs ORDER BY created_at DESC, id DESC LIMIT 100`, "runs_by_created"},
	{"runs sweep", `SELECT id FROM runs WHERE status = 'running' AND replica IN ('a', 'b') AND id > '' ORDER BY id LIMIT 1`, "runs_running_by_replica"},
	{"retention: expired runs", `SELECT id FROM runs WHERE status IN ('succeeded', 'failed', 'cancelled') AND finished_at < 5 ORDER BY finished_at LIMIT 128`, "runs_finished"},
}

func TestQueryPlansUseIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.db")
	open(t, path, nil) // migrated
	db := raw(t, path)
	for _, q := range planQueries {
		t.Run(q.name, func(t *testing.T) {
			rows, err := db.Query(`EXPLAIN QUERY PLAN ` + q.query)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			text := strings.Join(plan, "\n")
			if !strings.Contains(text, q.index) {
				t.Errorf("plan does not use %s:\n%s", q.index, text)
			}
			for _, step := range plan {
				// "SCAN a" reads a subquery's few rows, not a table.
				if strings.HasPrefix(step, "SCAN ") && !strings.Contains(step, "USING") && step != "SCAN a" {
					t.Errorf("plan scans a whole table (%s):\n%s", step, text)
				}
			}
		})
	}
	// The indexes migration 0022 dropped stay dropped: no query above
	// needed them.
	for _, gone := range []string{"sqlite_autoindex_activity_1", "sqlite_autoindex_activity_2"} {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = ?`, gone).Scan(&n); err != nil || n != 0 {
			t.Errorf("index %s: %d %v, want it gone", gone, n, err)
		}
	}
}
