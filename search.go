package switchboard

// SearchQuery asks the catalog for tools matching free text. Cursor is the
// NextCursor of a previous page of the same query.
type SearchQuery struct {
	Query   string  `json:"query"`
	Surface Surface `json:"surface,omitempty"`
	Limit   int     `json:"limit,omitempty"`
	Cursor  string  `json:"cursor,omitempty"`
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
