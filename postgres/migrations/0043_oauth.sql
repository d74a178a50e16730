-- The embedded OAuth authorization server's state (internal/oauthas):
-- sign-ins in progress, one-time tickets and codes, users' grants to
-- clients, refresh tokens, registered clients and token-signing keys, in
-- one table so every replica sees the same. Secrets are kept as hashes.
CREATE TABLE oauth_records (
    kind       text        NOT NULL,
    id         text        NOT NULL,
    ref        text        NOT NULL DEFAULT '',
    user_name  text        NOT NULL DEFAULT '',
    client_id  text        NOT NULL DEFAULT '',
    data       text        NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    expires_at timestamptz,
    used_at    timestamptz,
    revoked_at timestamptz,
    PRIMARY KEY (kind, id)
);
CREATE INDEX oauth_records_user ON oauth_records (kind, user_name, created_at);
CREATE INDEX oauth_records_expiry ON oauth_records (expires_at);
