-- A tab's advertisement, its workspace report and where its stream is
-- live with the session (issue 16), so every replica serves a tab the
-- same whichever one its requests reach: tools is its latest PUT
-- /sessions/{id}/tools (a JSON array of tools), report its latest PUT
-- /sessions/{id}/context ({contexts, droppedContexts, droppedPanels, at}),
-- stream the replica holding its event stream ('' none) since stream_at
-- (NULL: never attached), seen_at the last of those.
ALTER TABLE sessions ADD COLUMN tools TEXT NOT NULL DEFAULT '[]';
ALTER TABLE sessions ADD COLUMN report TEXT NOT NULL DEFAULT '{}';
ALTER TABLE sessions ADD COLUMN stream TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN stream_at INTEGER;
ALTER TABLE sessions ADD COLUMN seen_at INTEGER;
CREATE INDEX sessions_open_by_seen ON sessions (seen_at) WHERE closed_at IS NULL;
