// Package benchkit holds what the benchmarks in bench/ share: the public
// tool-retrieval sets and their metrics (toolret.go, retrieval.go) and a
// synthetic catalog generator (synth.go). It is internal because only the
// benchmarks use it.
package benchkit
