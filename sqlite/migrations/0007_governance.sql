-- Governance (issue 7): agent tokens, approvals, jobs and idempotency keys.
-- Times are INTEGER microseconds since the Unix epoch, UTC; JSON is TEXT.

CREATE TABLE agent_tokens (
    id         TEXT    PRIMARY KEY,
    agent      TEXT    NOT NULL,
    allow      TEXT    NOT NULL DEFAULT '[]',
    deny       TEXT    NOT NULL DEFAULT '[]',
    token_hash TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);

-- One approval per invocation: an approval binds to exactly one call.
CREATE TABLE approvals (
    id            TEXT    PRIMARY KEY,
    invocation_id TEXT    NOT NULL UNIQUE,
    run_id        TEXT    NOT NULL DEFAULT '',
    session_id    TEXT    NOT NULL DEFAULT '',
    tool          TEXT    NOT NULL,
    tool_version  INTEGER NOT NULL DEFAULT 0,
    args_hash     TEXT    NOT NULL,
    input         TEXT,
    summary       TEXT    NOT NULL DEFAULT '',
    class         TEXT    NOT NULL DEFAULT '',
    agent         TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL,
    reason        TEXT    NOT NULL DEFAULT '',
    decided_by    TEXT    NOT NULL DEFAULT '',
    channel       TEXT    NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    decided_at    INTEGER,
    consumed_at   INTEGER
);
CREATE INDEX approvals_by_status ON approvals (status, created_at);

CREATE TABLE jobs (
    id            TEXT    PRIMARY KEY,
    invocation_id TEXT    NOT NULL DEFAULT '',
    run_id        TEXT    NOT NULL DEFAULT '',
    tool          TEXT    NOT NULL,
    caller        TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL,
    progress      REAL    NOT NULL DEFAULT 0,
    message       TEXT    NOT NULL DEFAULT '',
    result        TEXT,
    error         TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    finished_at   INTEGER
);
CREATE INDEX jobs_running ON jobs (status) WHERE status = 'running';

CREATE TABLE idempotency_keys (
    scope         TEXT    NOT NULL,
    key           TEXT    NOT NULL,
    digest        TEXT    NOT NULL,
    invocation_id TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);
