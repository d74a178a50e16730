// Package search provides the catalog's full-text index: an in-process
// BM25F index over tool names, namespaces, summaries, descriptions and
// input-schema properties, with deterministic ranking and cursor paging.
//
// The registry owns one Index and keeps it in step with the store, calling
// Replace, Upsert and Remove whenever the catalog changes; Search answers
// POST /tools/search and the CLI and MCP equivalents. Because the index lives
// in the daemon rather than in the database, ranking is the same on SQLite
// and Postgres by construction and search latency does not depend on the
// store. docs/search.md gives the reasoning and bench/ the measurements.
//
// A seventh field holds the queries that led callers to each tool
// (SetLearned; the registry decides what is learned, Scrub what may be
// kept), and a regex mode matches names, summaries and descriptions with
// Go's linear-time regexp.
//
// Besides the domain package it imports only the Snowball stemmer and
// internal/redact (Scrub's secret patterns); it keeps no global state.
package search
