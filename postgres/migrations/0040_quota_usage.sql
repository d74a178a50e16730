-- Daily quotas: what each agent and each user used a UTC day (calls,
-- model tokens, cost in micro-dollars), one row a subject and day, shared
-- by every replica (docs/operations.md, "Spending limits").
CREATE TABLE quota_usage (
	subject     TEXT NOT NULL,
	day         TEXT NOT NULL,
	calls       BIGINT NOT NULL DEFAULT 0,
	tokens      BIGINT NOT NULL DEFAULT 0,
	cost_micros BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (subject, day)
);
-- Retention deletes past days first.
CREATE INDEX quota_usage_by_day ON quota_usage (day);
