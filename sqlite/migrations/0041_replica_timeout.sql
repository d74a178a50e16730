-- Each replica records its own timeout: a survivor waits at least that
-- long after a replica's last beat before it takes the replica over,
-- whatever its own setting (internal/daemon/replica.go).
ALTER TABLE replicas ADD COLUMN timeout_ms BIGINT NOT NULL DEFAULT 0;
