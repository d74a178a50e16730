// Package bench holds switchboard's benchmarks and the helpers they share,
// such as the public tool-retrieval sets and their metrics (toolret.go,
// retrieval.go) and a synthetic catalog generator (synth.go). The
// measurements themselves are tests that only log and Go benchmarks, in
// *_test.go; results, the machine and the commands that produced them are in
// README.md, one section a topic.
//
// Nothing here asserts on timings.
package bench
