-- An external agent (its token, acting for one user, over one transport
-- and connection) is one agent session across replicas: its session
-- records the key that names it, at most one live session holds a key,
-- and a replica the agent reaches second adopts the stored session
-- (Store.AgentAdopt) instead of starting its own.
ALTER TABLE agent_sessions ADD COLUMN ext_key text NOT NULL DEFAULT '';
CREATE UNIQUE INDEX agent_sessions_by_key ON agent_sessions (ext_key) WHERE ext_key <> '' AND ended_at IS NULL;
