-- Lean storage (issue 15 item 3); the reasons are in the sqlite driver's
-- 0022. The ledger's rows lose prev_hash (the row with id - 1 has it; the
-- primary key refuses a fork) and keep their hash as 32 bytes, not 64 hex
-- characters and not UNIQUE. Existing rows keep their space until a VACUUM
-- FULL; new rows are smaller. activity_head keeps the head's hash as hex.
ALTER TABLE activity DROP COLUMN prev_hash;
ALTER TABLE activity DROP CONSTRAINT activity_hash_key;
ALTER TABLE activity ALTER COLUMN hash TYPE bytea USING decode(hash, 'hex');
DROP INDEX activity_by_ts;
CREATE INDEX activity_by_ts ON activity (ts, id);

CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at);
CREATE INDEX idempotency_keys_by_invocation ON idempotency_keys (invocation_id);

-- GET /invocations?run= filters by run and lists newest first. The old
-- partial index (run_id) WHERE run_id <> '' was never chosen for it (a
-- bound run id cannot prove the partial condition, and every call has a
-- run id anyway); this one serves the filter and the order.
DROP INDEX invocations_by_run;
CREATE INDEX invocations_by_run ON invocations (run_id, created_at, id);
