-- A task's assignee as a column, so an agent lists the tasks handed to it
-- (GET /api/v1/tasks?assignee=me). Every task stored before was the
-- built-in assistant's.
ALTER TABLE tasks ADD COLUMN assignee text NOT NULL DEFAULT 'agent:assistant';
CREATE INDEX tasks_by_assignee ON tasks (owner, assignee, created_at);
