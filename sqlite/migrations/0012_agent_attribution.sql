-- Agent attribution (issue 12): the agent session that made a call and
-- that its approval waits for. '' for calls made outside any session.
ALTER TABLE invocations ADD COLUMN agent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN agent_id TEXT NOT NULL DEFAULT '';
