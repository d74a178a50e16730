-- The embedded OAuth authorization server's state (internal/oauthas):
-- sign-ins in progress, one-time tickets and codes, users' grants to
-- clients, refresh tokens, registered clients and token-signing keys, in
-- one table so every replica sees the same. Secrets are kept as hashes.
CREATE TABLE oauth_records (
    kind       TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    ref        TEXT    NOT NULL DEFAULT '',
    user_name  TEXT    NOT NULL DEFAULT '',
    client_id  TEXT    NOT NULL DEFAULT '',
    data       TEXT    NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    used_at    INTEGER,
    revoked_at INTEGER,
    PRIMARY KEY (kind, id)
);
CREATE INDEX oauth_records_user ON oauth_records (kind, user_name, created_at);
CREATE INDEX oauth_records_expiry ON oauth_records (expires_at);
