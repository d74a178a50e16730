package switchboard

// QuotaUsage is what one subject (an agent, or the user agents act for)
// used in one UTC day, or, as a limit, what it may use; a zero field of a
// limit is no limit.
type QuotaUsage struct {
	Calls  int64 `json:"calls"`
	Tokens int64 `json:"tokens"`
	// CostMicros is US dollars × 1e6, so sums stay exact.
	CostMicros int64 `json:"costMicros"`
}

// DailyQuota bounds what each agent and each user may spend a UTC day,
// counted in the store so every replica shares one count: tool calls
// (counted when a call is admitted), and model tokens and cost of the
// built-in assistant (counted after each model call, checked before the
// next). An agent's quota is per agent name, whoever it acts for; a user's
// is per person, across all agents acting for them. Over one, calls and
// runs end with QUOTA_EXCEEDED until 00:00 UTC.
type DailyQuota struct {
	Agent QuotaUsage `json:"agent"`
	User  QuotaUsage `json:"user"`
}

// QuotaRow is one subject's usage of one day, as the store keeps it.
type QuotaRow struct {
	Subject string     `json:"subject"`
	Used    QuotaUsage `json:"used"`
}

// Zero reports whether q limits nothing.
func (q DailyQuota) Zero() bool { return q == DailyQuota{} }
