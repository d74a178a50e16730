-- Governance (issue 7): agent tokens, approvals, jobs and idempotency keys.
-- JSON columns are json (kept byte for byte), times timestamptz.

CREATE TABLE agent_tokens (
    id         text        PRIMARY KEY,
    agent      text        NOT NULL,
    allow      json        NOT NULL DEFAULT '[]',
    deny       json        NOT NULL DEFAULT '[]',
    token_hash text        NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);

-- One approval per invocation: an approval binds to exactly one call.
CREATE TABLE approvals (
    id            text        PRIMARY KEY,
    invocation_id text        NOT NULL UNIQUE,
    run_id        text        NOT NULL DEFAULT '',
    session_id    text        NOT NULL DEFAULT '',
    tool          text        NOT NULL,
    tool_version  bigint      NOT NULL DEFAULT 0,
    args_hash     text        NOT NULL,
    input         json,
    summary       text        NOT NULL DEFAULT '',
    class         text        NOT NULL DEFAULT '',
    agent         text        NOT NULL DEFAULT '',
    status        text        NOT NULL,
    reason        text        NOT NULL DEFAULT '',
    decided_by    text        NOT NULL DEFAULT '',
    channel       text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    decided_at    timestamptz,
    consumed_at   timestamptz
);
CREATE INDEX approvals_by_status ON approvals (status, created_at);

CREATE TABLE jobs (
    id            text        PRIMARY KEY,
    invocation_id text        NOT NULL DEFAULT '',
    run_id        text        NOT NULL DEFAULT '',
    tool          text        NOT NULL,
    caller        text        NOT NULL DEFAULT '',
    status        text        NOT NULL,
    progress      double precision NOT NULL DEFAULT 0,
    message       text        NOT NULL DEFAULT '',
    result        json,
    error         json,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    finished_at   timestamptz
);
CREATE INDEX jobs_running ON jobs (status) WHERE status = 'running';

CREATE TABLE idempotency_keys (
    scope         text        NOT NULL,
    key           text        NOT NULL,
    digest        text        NOT NULL,
    invocation_id text        NOT NULL,
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (scope, key)
);
