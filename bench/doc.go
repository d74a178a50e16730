// Package bench holds switchboard's benchmarks. The measurements are tests
// that only log and Go benchmarks, in *_test.go; the helpers they share
// (retrieval sets and metrics, a synthetic catalog) are in internal/benchkit.
// Results, the machine and the commands that produced them are in
// README.md, one section a topic.
//
// Nothing here asserts on timings.
package bench
