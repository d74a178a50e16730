-- Signing keys (issue 25): the keys switchboard signs the assertion on
-- every HTTP-binding request with, shared by every replica so all sign
-- with one key set and publish one JWKS. private_key is the base64 of the
-- PKCS #8 DER.
CREATE TABLE signing_keys (
    id          text        PRIMARY KEY,
    alg         text        NOT NULL,
    private_key text        NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX signing_keys_created ON signing_keys (created_at);
