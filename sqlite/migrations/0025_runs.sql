-- Agent runs in the store (issue 16): any replica answers GET /runs/{id}
-- and follows its events. The replica running a run is the only writer of
-- its rows (it flushes events in batches); a survivor ends a dead
-- replica's running runs (Store.RunFailInFlight).
CREATE TABLE runs (
    id          TEXT    PRIMARY KEY,
    thread      TEXT    NOT NULL,
    session     TEXT    NOT NULL DEFAULT '',
    owner       TEXT    NOT NULL DEFAULT '',
    replica     TEXT    NOT NULL DEFAULT '',
    status      TEXT    NOT NULL,
    harness     TEXT    NOT NULL DEFAULT '',
    model       TEXT,
    steps       INTEGER NOT NULL DEFAULT 0,
    usage       TEXT    NOT NULL DEFAULT '{}',
    cost        REAL,
    events      INTEGER NOT NULL DEFAULT 0,
    error       TEXT,
    waiting     TEXT    NOT NULL DEFAULT '[]',
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
);
CREATE INDEX runs_by_created ON runs (created_at, id);
CREATE INDEX runs_running_by_replica ON runs (replica, id) WHERE status = 'running';
CREATE INDEX runs_finished ON runs (finished_at) WHERE status IN ('succeeded', 'failed', 'cancelled');
CREATE TABLE run_events (
    run_id TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    event  TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
);
