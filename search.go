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
	Score   float64 `json:"score,omitempty"`
}

// SearchResult is one page of hits, best first.
type SearchResult struct {
	Items      []SearchHit `json:"items"`
	NextCursor string      `json:"nextCursor,omitempty"`
}
