-- A replica that holds a presence lock (Postgres: a session-level
-- advisory lock keyed on its id, internal/cluster/members.go) says so: a
-- survivor that finds such a replica's lock free at two consecutive
-- probes takes it for dead without waiting for its heartbeat to lapse. A
-- replica without it (heartbeats only) is judged by its beats alone.
-- 1: it holds one; 0: it does not.
ALTER TABLE replicas ADD COLUMN presence_lock INTEGER NOT NULL DEFAULT 0;
