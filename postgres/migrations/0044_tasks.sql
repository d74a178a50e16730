-- Delegated tasks (docs/tasks.md): the record of work a user handed to an
-- agent. The columns lists filter on; doc is the whole record as JSON
-- (envelope, steps, artifacts, usage); revision is the compare-and-swap
-- every update goes through, so two replicas never interleave writes.
CREATE TABLE tasks (
	id         text PRIMARY KEY,
	owner      text NOT NULL,
	creator    text NOT NULL,
	status     text NOT NULL,
	replica    text NOT NULL DEFAULT '',
	revision   bigint NOT NULL,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	doc        json NOT NULL
);
CREATE INDEX tasks_by_owner ON tasks (owner, created_at);
CREATE INDEX tasks_by_status ON tasks (status);
