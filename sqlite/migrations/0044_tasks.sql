-- Delegated tasks (docs/tasks.md): the record of work a user handed to an
-- agent. The columns lists filter on; doc is the whole record as JSON
-- (envelope, steps, artifacts, usage); revision is the compare-and-swap
-- every update goes through, so two replicas never interleave writes.
CREATE TABLE tasks (
	id         TEXT PRIMARY KEY,
	owner      TEXT NOT NULL,
	creator    TEXT NOT NULL,
	status     TEXT NOT NULL,
	replica    TEXT NOT NULL DEFAULT '',
	revision   BIGINT NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	doc        TEXT NOT NULL
);
CREATE INDEX tasks_by_owner ON tasks (owner, created_at);
CREATE INDEX tasks_by_status ON tasks (status);
