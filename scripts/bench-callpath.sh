#!/usr/bin/env bash
# Measures the call path against its baselines (bench/callpath_test.go,
# issue 15's targets) and prints the rows of bench/README.md's "Call path"
# table: the machine, the load average before and after, the table, and
# with PROFILE=dir, where each compared path's CPU goes.
#
#   scripts/bench-callpath.sh                 # every family, 3 rounds
#   scripts/bench-callpath.sh mcp             # one family (gofunc, gofunc-pg, http,
#                                             # http-0.5ms, mcp, mcp-stateless, browser)
#   N=3000 ROUNDS=5 scripts/bench-callpath.sh # calls a side and round, rounds
#   PROFILE=/tmp/prof scripts/bench-callpath.sh  # + CPU breakdown a case
#
# The full go test log goes to $LOG (default /tmp/bench-callpath.log).
set -euo pipefail
cd "$(dirname "$0")/.."

family="${1:-}"
log="${LOG:-/tmp/bench-callpath.log}"
export SWITCHBOARD_BENCH_N="${N:-}" SWITCHBOARD_BENCH_ROUNDS="${ROUNDS:-}" SWITCHBOARD_BENCH_PROFILE="${PROFILE:-}"

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "Machine: $(nproc) CPUs, ${cpu:-unknown CPU}, $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH), $(uname -sr)."
echo "Load before: $(cut -d' ' -f1-3 /proc/loadavg)."
pattern='TestCallPath$'
if [ -n "$family" ]; then pattern="TestCallPath\$/^${family}\$"; fi
status=0
go test -count=1 ./bench -run "$pattern" -v -timeout 60m >"$log" 2>&1 || status=$?
echo "Load after: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
grep -F 'callpath-row: ' "$log" | sed 's/.*callpath-row: //' | awk '!(/^\| path \|/ && seen++) && !(/^\|---/ && seenr++)'
if grep -qF 'callpath-profile: ' "$log"; then
  echo
  grep -F 'callpath-profile: ' "$log" | sed 's/.*callpath-profile: /- /'
fi
if [ "$status" -ne 0 ]; then
  echo "go test failed (status $status); see $log" >&2
  grep -E '^\s*(--- FAIL|FAIL|panic)' "$log" | head -20 >&2 || true
fi
exit "$status"
