-- Role scopes on panels (issue 18): an agent token may be limited to some
-- panels and page slots, {"panels": [globs], "slots": [globs]} as JSON
-- text. '{}' limits nothing, which is what every older token meant.
ALTER TABLE agent_tokens ADD COLUMN panel_scope TEXT NOT NULL DEFAULT '{}';
