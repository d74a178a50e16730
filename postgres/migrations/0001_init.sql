-- Times are timestamptz (microsecond precision, like the sqlite driver's
-- integer microseconds), so activity hashes verify on either store. JSON
-- columns are json, not jsonb: json keeps the text byte for byte, and hashed
-- or schema JSON must not be re-ordered. Names compare bytewise (COLLATE "C")
-- so listings are ordered the same as on SQLite.

CREATE TABLE catalog (
    id       int    PRIMARY KEY CHECK (id = 1),
    revision bigint NOT NULL
);
INSERT INTO catalog (id, revision) VALUES (1, 0);

CREATE TABLE tools (
    source      text COLLATE "C" NOT NULL,
    name        text COLLATE "C" NOT NULL,
    source_rank int    NOT NULL,
    version     bigint NOT NULL,
    descriptor  json   NOT NULL,
    PRIMARY KEY (source, name)
);
CREATE INDEX tools_by_name ON tools (name, source_rank);

CREATE TABLE invocations (
    id           text   PRIMARY KEY,
    run_id       text   NOT NULL DEFAULT '',
    tool         text   NOT NULL,
    tool_version bigint NOT NULL DEFAULT 0,
    surface      text   NOT NULL DEFAULT '',
    session_id   text   NOT NULL DEFAULT '',
    caller       text   NOT NULL DEFAULT '',
    status       text   NOT NULL,
    input        json,
    result       json,
    error        json,
    input_bytes  int    NOT NULL DEFAULT 0,
    result_bytes int    NOT NULL DEFAULT 0,
    created_at   timestamptz,
    updated_at   timestamptz,
    finished_at  timestamptz,
    duration_ms  double precision NOT NULL DEFAULT 0
);
CREATE INDEX invocations_in_flight ON invocations (status)
    WHERE status IN ('pending', 'awaiting_approval', 'dispatched');
CREATE INDEX invocations_by_run ON invocations (run_id) WHERE run_id <> '';

CREATE TABLE sessions (
    id         text PRIMARY KEY,
    token_hash text NOT NULL,
    principal  text NOT NULL DEFAULT '',
    created_at timestamptz,
    closed_at  timestamptz
);

-- The chain head is locked (SELECT ... FOR UPDATE) by every append, so
-- appends from any number of replicas are serialized.
CREATE TABLE activity_head (
    id        int    PRIMARY KEY CHECK (id = 1),
    last_id   bigint NOT NULL,
    last_hash text   NOT NULL
);
INSERT INTO activity_head (id, last_id, last_hash) VALUES (1, 0, '');

-- prev_hash is UNIQUE: a fork is refused by the database itself.
CREATE TABLE activity (
    id         bigint PRIMARY KEY,
    ts         timestamptz NOT NULL,
    actor      text NOT NULL,
    verb       text NOT NULL,
    target     text NOT NULL,
    provenance json,
    reversal   json,
    details    json,
    prev_hash  text NOT NULL UNIQUE,
    hash       text NOT NULL UNIQUE
);
CREATE INDEX activity_by_actor ON activity (actor, id);
CREATE INDEX activity_by_verb ON activity (verb, id);
CREATE INDEX activity_by_ts ON activity (ts);
