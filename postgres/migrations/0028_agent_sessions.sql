-- Agent sessions in the store (issue 16): every replica lists and reaches
-- the sessions the others own. doc is the session as the API shows it;
-- the columns beside it are what queries select on. last_seen is kept
-- apart so a heartbeat received by any replica is one small update.
CREATE TABLE agent_sessions (
    id         text        PRIMARY KEY,
    replica    text        NOT NULL DEFAULT '',
    user_name  text        NOT NULL DEFAULT '',
    heartbeat  integer     NOT NULL DEFAULT 0,
    started_at timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL,
    ended_at   timestamptz,
    doc        json        NOT NULL
);
CREATE INDEX agent_sessions_live ON agent_sessions (replica) WHERE ended_at IS NULL;
CREATE INDEX agent_sessions_ended ON agent_sessions (ended_at) WHERE ended_at IS NOT NULL;
