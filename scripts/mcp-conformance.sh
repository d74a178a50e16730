#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# active server suite) against switchboard's /mcp. Self-contained: installs
# the suite with npm into a cache outside the repo, patches it for Node 20,
# builds the test harness (internal/mcpconformance/cmd/conformance-server: a
# daemon with the suite's fixtures registered through switchboard's own
# registry and broker, loopback only; not part of the switchboard binary),
# starts it, runs the suite, stops it. Exits non-zero when a scenario fails or anything else goes
# wrong. See docs/mcp.md, "Conformance".
#
#   scripts/mcp-conformance.sh                 # the active suite
#   scripts/mcp-conformance.sh --suite all     # extra arguments go to the suite
#   KEEP=1 scripts/mcp-conformance.sh          # keep the work dir (results, log)
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.1.16
CACHE="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}/mcp-conformance-$VERSION"
PKG="$CACHE/node_modules/@modelcontextprotocol/conformance"
CLI="$PKG/dist/index.js"

log() { printf '== %s\n' "$*" >&2; }

command -v node >/dev/null || { log "node is required (Node 20 or later)"; exit 1; }
command -v npm >/dev/null || { log "npm is required"; exit 1; }

if [ ! -f "$CLI" ]; then
  log "installing @modelcontextprotocol/conformance@$VERSION into $CACHE"
  mkdir -p "$CACHE"
  npm install --prefix "$CACHE" --no-audit --no-fund --no-package-lock --loglevel=error \
    "@modelcontextprotocol/conformance@$VERSION" >&2
fi

# 0.1.16 imports fs.globSync, which Node 20 lacks, so the module fails to
# load. Only client-side scenarios (checks.json discovery) call it: replace
# that one import with a stub that says so.
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ] && grep -q 'globSync as o,' "$CLI"; then
  log "patching fs.globSync out of the suite for Node $(node --version)"
  sed -i 's/import{existsSync as a,globSync as o,mkdtempSync as s,/const o=()=>{throw Error("fs.globSync needs Node 22 (patched out for Node 20; client scenarios only)")};import{existsSync as a,mkdtempSync as s,/' "$CLI"
fi
node "$CLI" --version >/dev/null || { log "the conformance suite does not load"; exit 1; }

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [ -n "${KEEP:-}" ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

log "building the conformance server"
go build -o "$WORK/conformance-server" ./internal/mcpconformance/cmd/conformance-server

log "starting the daemon with the conformance fixtures"
"$WORK/conformance-server" --addr 127.0.0.1:0 --data "$WORK/data" >"$WORK/url" 2>"$WORK/server.log" &
SERVER_PID=$!
URL=""
for _ in $(seq 1 300); do
  URL="$(head -n1 "$WORK/url" 2>/dev/null || true)"
  [ -n "$URL" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { log "the daemon exited:"; cat "$WORK/server.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$URL" ] || { log "the daemon did not start"; cat "$WORK/server.log" >&2; exit 1; }

log "running the suite against $URL"
status=0
(cd "$WORK" && node "$CLI" server --url "$URL" --suite active -o "$WORK/results" "$@") || status=$?
if [ "$status" -ne 0 ]; then
  log "conformance failed (exit $status); daemon log:"
  tail -n 50 "$WORK/server.log" >&2
fi
exit "$status"
