// Package bench holds switchboard's benchmarks. The measurements are tests
// that only log and Go benchmarks, in *_test.go; the helpers they share
// (retrieval sets and metrics, a synthetic catalog) are in internal/benchkit.
// Results, the machine and the commands that produced them are in
// README.md, one section a topic. The call-path comparisons (TestCallPath)
// share one harness, harness_test.go: sides interleaved in one run, ratios
// against a baseline, min/median/max over rounds; scripts/bench-callpath.sh
// prints their table.
//
// Nothing here asserts on timings.
package bench
