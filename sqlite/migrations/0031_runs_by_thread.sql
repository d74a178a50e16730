-- A chat's runs (issue 16): a replica that does not hold a chat's run
-- finds the chat's run in progress (to relay a follow-up, to serve an AI
-- SDK reattach) and the transport that last ran it (its capabilities) by
-- thread, newest first (Store.RunList with a ThreadID).
CREATE INDEX runs_by_thread ON runs (thread, created_at, id);
