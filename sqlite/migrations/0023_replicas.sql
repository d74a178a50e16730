-- Several replicas on one store (issue 16 item 3): each serve process
-- registers and heartbeats; work records the replica that owns it, so a
-- survivor resolves only a dead replica's work. '' is the owner of work
-- recorded before this migration (one daemon per store).
CREATE TABLE replicas (
    id           TEXT    PRIMARY KEY,
    name         TEXT    NOT NULL,
    addr         TEXT    NOT NULL DEFAULT '',
    host         TEXT    NOT NULL DEFAULT '',
    beats        INTEGER NOT NULL DEFAULT 0,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    stopped_at   INTEGER,
    claimed_by   TEXT    NOT NULL DEFAULT '',
    claimed_at   INTEGER
);
ALTER TABLE invocations ADD COLUMN replica TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN replica TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN replica TEXT NOT NULL DEFAULT '';
CREATE INDEX invocations_in_flight_by_replica ON invocations (replica)
    WHERE status IN ('pending', 'awaiting_approval', 'dispatched');
