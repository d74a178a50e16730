-- Whom a call was made for ("user:alice") and the approval it waits or
-- waited on, on the invocation; whom a job's call was made for, on the
-- job. Record reads filter by the user, so one agent name acting for two
-- users reads two sets of records. '' on older rows: no user recorded
-- (read as the operator's).
ALTER TABLE invocations ADD COLUMN user_name text NOT NULL DEFAULT '';
ALTER TABLE invocations ADD COLUMN approval_id text NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN user_name text NOT NULL DEFAULT '';
