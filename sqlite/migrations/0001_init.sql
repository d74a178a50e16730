-- Times are INTEGER microseconds since the Unix epoch, UTC, so they
-- round-trip exactly like Postgres timestamptz and activity hashes verify on
-- either store. JSON columns are TEXT, kept byte for byte.

CREATE TABLE catalog (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL
);
INSERT INTO catalog (id, revision) VALUES (1, 0);

CREATE TABLE tools (
    source      TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    source_rank INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    descriptor  TEXT    NOT NULL,
    PRIMARY KEY (source, name)
);
CREATE INDEX tools_by_name ON tools (name, source_rank);

CREATE TABLE invocations (
    id           TEXT    PRIMARY KEY,
    run_id       TEXT    NOT NULL DEFAULT '',
    tool         TEXT    NOT NULL,
    tool_version INTEGER NOT NULL DEFAULT 0,
    surface      TEXT    NOT NULL DEFAULT '',
    session_id   TEXT    NOT NULL DEFAULT '',
    caller       TEXT    NOT NULL DEFAULT '',
    status       TEXT    NOT NULL,
    input        TEXT,
    result       TEXT,
    error        TEXT,
    input_bytes  INTEGER NOT NULL DEFAULT 0,
    result_bytes INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER,
    updated_at   INTEGER,
    finished_at  INTEGER,
    duration_ms  REAL    NOT NULL DEFAULT 0
);
CREATE INDEX invocations_in_flight ON invocations (status)
    WHERE status IN ('pending', 'awaiting_approval', 'dispatched');
CREATE INDEX invocations_by_run ON invocations (run_id) WHERE run_id <> '';

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL,
    principal  TEXT NOT NULL DEFAULT '',
    created_at INTEGER,
    closed_at  INTEGER
);

-- prev_hash is UNIQUE: two entries claiming the same predecessor would be a
-- fork, so the database refuses one even if the driver's locking were wrong.
CREATE TABLE activity (
    id         INTEGER PRIMARY KEY,
    ts         INTEGER NOT NULL,
    actor      TEXT    NOT NULL,
    verb       TEXT    NOT NULL,
    target     TEXT    NOT NULL,
    provenance TEXT,
    reversal   TEXT,
    details    TEXT,
    prev_hash  TEXT    NOT NULL UNIQUE,
    hash       TEXT    NOT NULL UNIQUE
);
CREATE INDEX activity_by_actor ON activity (actor, id);
CREATE INDEX activity_by_verb ON activity (verb, id);
CREATE INDEX activity_by_ts ON activity (ts);
