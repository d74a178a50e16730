-- Several replicas on one store (issue 16 item 3): each serve process
-- registers and heartbeats; work records the replica that owns it, so a
-- survivor resolves only a dead replica's work. '' is the owner of work
-- recorded before this migration (one daemon per store).
CREATE TABLE replicas (
    id           text        PRIMARY KEY,
    name         text        NOT NULL,
    addr         text        NOT NULL DEFAULT '',
    host         text        NOT NULL DEFAULT '',
    beats        bigint      NOT NULL DEFAULT 0,
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    stopped_at   timestamptz,
    claimed_by   text        NOT NULL DEFAULT '',
    claimed_at   timestamptz
);
ALTER TABLE invocations ADD COLUMN replica text NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN replica text NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN replica text NOT NULL DEFAULT '';
CREATE INDEX invocations_in_flight_by_replica ON invocations (replica)
    WHERE status IN ('pending', 'awaiting_approval', 'dispatched');
