-- The scope an app's backend assigns to a browser session's user (issue
-- 14 item 6): the assistant of a run the tab starts is limited to it.
-- {"allow": [globs], "deny": [globs], "panels": [globs], "slots": [globs]};
-- '{}' limits nothing, which is what every older session meant.
ALTER TABLE sessions ADD COLUMN scope TEXT NOT NULL DEFAULT '{}';
