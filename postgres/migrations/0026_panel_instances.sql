-- Panel instances in the store (issue 16 item 2): any replica reads a
-- tab's panels, the replica its stream (re)attaches to rebuilds them, and
-- every change is a compare-and-swap on version. doc is package panel's
-- encoding, json (not jsonb) so it is kept byte for byte.
CREATE TABLE panel_instances (
    id         text        PRIMARY KEY,
    session_id text        NOT NULL,
    seq        bigint      NOT NULL,
    version    bigint      NOT NULL,
    doc        json        NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX panel_instances_by_session ON panel_instances (session_id, seq);
