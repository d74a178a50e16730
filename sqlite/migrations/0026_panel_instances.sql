-- Panel instances in the store (issue 16 item 2): any replica reads a
-- tab's panels, the replica its stream (re)attaches to rebuilds them, and
-- every change is a compare-and-swap on version. doc is package panel's
-- encoding, kept byte for byte.
CREATE TABLE panel_instances (
    id         TEXT    PRIMARY KEY,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    version    INTEGER NOT NULL,
    doc        TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX panel_instances_by_session ON panel_instances (session_id, seq);
