-- Chat history, one row per chat session (issue 6). Numbered after the
-- issue so parallel feature migrations do not collide. messages is json
-- (not jsonb) so the document is kept byte for byte.
CREATE TABLE chat_history (
    session_id text        PRIMARY KEY,
    owner      text        NOT NULL DEFAULT '',
    messages   json        NOT NULL,
    revision   bigint      NOT NULL,
    updated_at timestamptz NOT NULL
);
