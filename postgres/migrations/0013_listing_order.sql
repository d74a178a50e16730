-- The console lists recent invocations and jobs (GET /invocations,
-- GET /jobs, issue 17): newest first, served by these indexes instead of a
-- sort of the whole table.
CREATE INDEX invocations_by_created ON invocations (created_at, id);
CREATE INDEX jobs_by_created ON jobs (created_at, id);
