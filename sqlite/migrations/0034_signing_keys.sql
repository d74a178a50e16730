-- Signing keys (issue 25): the keys switchboard signs the assertion on
-- every HTTP-binding request with, shared by every replica so all sign
-- with one key set and publish one JWKS. private_key is the base64 of the
-- PKCS #8 DER; created_at is INTEGER microseconds since the epoch, UTC.
CREATE TABLE signing_keys (
    id          TEXT    PRIMARY KEY,
    alg         TEXT    NOT NULL,
    private_key TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX signing_keys_created ON signing_keys (created_at);
