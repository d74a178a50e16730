-- Search that learns from use (issue 33): a query a caller searched with
-- before it successfully called a tool, scrubbed of anything identifying,
-- once per (tool, query, caller). caller is a digest of the caller's
-- identity, never the identity. Registry aggregates them into each tool's
-- learned field at start (docs/search.md, "Learning from use").
CREATE TABLE search_examples (
	tool          TEXT NOT NULL,
	query         TEXT NOT NULL,
	caller        TEXT NOT NULL,
	invocation_id TEXT NOT NULL,
	created_at    INTEGER NOT NULL,
	PRIMARY KEY (tool, query, caller)
);
-- The caller's bounds (newest per caller and tool, per caller).
CREATE INDEX search_examples_by_caller ON search_examples (caller, created_at);
-- A reversal takes its call's examples back.
CREATE INDEX search_examples_by_invocation ON search_examples (invocation_id);
-- Retention deletes the oldest first.
CREATE INDEX search_examples_by_created ON search_examples (created_at);
