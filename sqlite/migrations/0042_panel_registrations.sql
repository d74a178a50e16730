-- Host panels and data adapters declared over HTTP or in a manifest
-- (POST /api/v1/panels, POST /api/v1/adapters): kept here so that every
-- replica, and the daemon after a restart, serves them. definition is the
-- declaration as sent (a HostPanel or a HostAdapter).
CREATE TABLE panel_registrations (
	kind       TEXT NOT NULL,
	name       TEXT NOT NULL,
	definition TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (kind, name)
);
