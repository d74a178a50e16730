-- Chat history, one row per chat session (issue 6). Numbered after the
-- issue so parallel feature migrations do not collide.
CREATE TABLE chat_history (
    session_id TEXT    PRIMARY KEY,
    owner      TEXT    NOT NULL DEFAULT '',
    messages   TEXT    NOT NULL,
    revision   INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
