-- Whom a run acts for: the user of the tab that started it (the operator
-- for a run the admin token started), so a person signed in to the
-- console lists their own runs (Store.RunList with a User), newest first.
ALTER TABLE runs ADD COLUMN acts_for text NOT NULL DEFAULT '';
CREATE INDEX runs_by_user ON runs (acts_for, created_at, id);
