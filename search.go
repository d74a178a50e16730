package switchboard

import "time"

// SearchQuery asks the catalog for tools matching free text. Cursor is the
// NextCursor of a previous page of the same query.
type SearchQuery struct {
	Query   string  `json:"query"`
	Surface Surface `json:"surface,omitempty"`
	Limit   int     `json:"limit,omitempty"`
	Cursor  string  `json:"cursor,omitempty"`
	// Regex makes Query an RE2 pattern (Go's linear-time regexp syntax, at
	// most 256 bytes) matched against tool names, summaries and
	// descriptions instead of ranked words. Add (?i) to ignore case.
	Regex bool `json:"regex,omitempty"`
}

// SearchHit is one result: name and one-liner only (deferred disclosure);
// the full schema comes from describing the tool.
type SearchHit struct {
	Name    string  `json:"name"`
	Summary string  `json:"summary"`
	Surface Surface `json:"surface"`
	Class   Class   `json:"class"`
	// Approval is the tool's declared approval (none, hitl, user-only), so
	// a listing shows which calls wait for the user without a describe.
	Approval Approval `json:"approval,omitempty"`
	Score    float64  `json:"score,omitempty"`
	// SessionID names the open tab whose live browser tool this is.
	SessionID string `json:"sessionId,omitempty"`
}

// SearchResult is one page of hits, best first.
type SearchResult struct {
	Items      []SearchHit `json:"items"`
	NextCursor string      `json:"nextCursor,omitempty"`
	// OpenTab holds the matching browser tools of open tabs (first page
	// only), beside Items: they have their own index, and scores of two
	// indexes are not comparable.
	OpenTab []SearchHit `json:"openTab,omitempty"`
}

// SearchExample is one positive example for search that learns from use:
// a caller searched with Query (already scrubbed of anything identifying)
// and then successfully called Tool within the attribution window
// (docs/search.md). Caller is an opaque digest of the caller's identity,
// never the identity itself; InvocationID is the call, so a reversal of
// it can take the example back.
type SearchExample struct {
	Tool         string
	Query        string
	Caller       string
	InvocationID string
	At           time.Time
}

// LearnedQuery is one query a tool learned, as the store aggregates its
// examples: by how many distinct callers, and when it was last used.
type LearnedQuery struct {
	Tool     string    `json:"tool"`
	Query    string    `json:"query"`
	Callers  int       `json:"callers"`
	LastUsed time.Time `json:"lastUsed"`
}

// ToolLearned is what GET /tools/{name}/learned answers: the tool's
// learned queries, most recently used first.
type ToolLearned struct {
	Tool    string         `json:"tool"`
	Enabled bool           `json:"enabled"`
	Queries []LearnedQuery `json:"queries"`
}
