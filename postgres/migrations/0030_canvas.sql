-- The canvas policy held in the store (issue 16), so every replica
-- enforces the same one: canvas is a session's narrowing (the canvasPolicy
-- of POST /sessions, a JSON object; '{}' none), written with the session;
-- settings holds daemon-wide values set at run time, such as the host's
-- canvas layer (key 'canvas.host', PUT /api/v1/canvas).
ALTER TABLE sessions ADD COLUMN canvas json NOT NULL DEFAULT '{}';
CREATE TABLE settings (
	key        text PRIMARY KEY,
	value      json NOT NULL,
	updated_at timestamptz NOT NULL
);
