-- Search that learns from use (issue 33): a query a caller searched with
-- before it successfully called a tool, scrubbed of anything identifying,
-- once per (tool, query, caller). caller is a digest of the caller's
-- identity, never the identity. Registry aggregates them into each tool's
-- learned field at start (docs/search.md, "Learning from use").
CREATE TABLE search_examples (
	tool          text NOT NULL,
	query         text NOT NULL,
	caller        text NOT NULL,
	invocation_id text NOT NULL,
	created_at    timestamptz NOT NULL,
	PRIMARY KEY (tool, query, caller)
);
-- The caller's bounds (newest per caller and tool, per caller).
CREATE INDEX search_examples_by_caller ON search_examples (caller, created_at);
-- A reversal takes its call's examples back.
CREATE INDEX search_examples_by_invocation ON search_examples (invocation_id);
-- Retention deletes the oldest first.
CREATE INDEX search_examples_by_created ON search_examples (created_at);
