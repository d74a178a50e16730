-- Agent runs in the store (issue 16): any replica answers GET /runs/{id}
-- and follows its events. The replica running a run is the only writer of
-- its rows (it flushes events in batches); a survivor ends a dead
-- replica's running runs (Store.RunFailInFlight). Events are json (not
-- jsonb): kept byte for byte, as they were streamed.
CREATE TABLE runs (
    id          text        PRIMARY KEY,
    thread      text        NOT NULL,
    session     text        NOT NULL DEFAULT '',
    owner       text        NOT NULL DEFAULT '',
    replica     text        NOT NULL DEFAULT '',
    status      text        NOT NULL,
    harness     text        NOT NULL DEFAULT '',
    model       json,
    steps       bigint      NOT NULL DEFAULT 0,
    usage       json        NOT NULL DEFAULT '{}',
    cost        double precision,
    events      bigint      NOT NULL DEFAULT 0,
    error       json,
    waiting     json        NOT NULL DEFAULT '[]',
    created_at  timestamptz NOT NULL,
    finished_at timestamptz
);
CREATE INDEX runs_by_created ON runs (created_at, id);
CREATE INDEX runs_running_by_replica ON runs (replica, id) WHERE status = 'running';
CREATE INDEX runs_finished ON runs (finished_at) WHERE status IN ('succeeded', 'failed', 'cancelled');
CREATE TABLE run_events (
    run_id text   NOT NULL,
    seq    bigint NOT NULL,
    event  json   NOT NULL,
    PRIMARY KEY (run_id, seq)
);
