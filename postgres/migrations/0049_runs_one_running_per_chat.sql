-- A chat has at most one running run in the whole store, so a start of a
-- chat busy on another replica is refused (CONFLICT) as it is on the
-- replica running it. Runs that two replicas ran side by side before
-- this end failed, all but the newest of each chat: their replica is
-- cleared, so their owner's next flush is refused as a dead replica's
-- late flush is.
UPDATE runs SET status = 'failed', replica = '', finished_at = created_at,
    error = '{"code":"OUTCOME_UNKNOWN","message":"another run of this chat was running on another replica; this one was ended by an upgrade"}'
WHERE status = 'running' AND EXISTS (
    SELECT 1 FROM runs n WHERE n.thread = runs.thread AND n.status = 'running'
        AND (n.created_at > runs.created_at OR (n.created_at = runs.created_at AND n.id > runs.id)));
CREATE UNIQUE INDEX runs_one_running_per_thread ON runs (thread) WHERE status = 'running';
