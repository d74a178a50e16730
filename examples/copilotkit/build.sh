#!/usr/bin/env bash
# Builds the stock CopilotKit front end (examples/copilotkit; e2e/copilotkit_test.go
# drives the same build):
# installs the pinned packages (package-lock.json) and bundles src/ with
# esbuild into dist/. The install (~850 MB, a minute or more) is kept in a
# cache outside the clone, keyed by the lockfile's hash, and node_modules
# here is a link to it: a clone whose lockfile has not changed reuses it.
#
#   examples/copilotkit/build.sh
#   SWITCHBOARD_CACHE=/some/dir examples/copilotkit/build.sh
set -euo pipefail
cd "$(dirname "$0")"

log() { printf '== %s\n' "$*" >&2; }

command -v node >/dev/null || { log "node is required (Node 20 or later)"; exit 1; }
command -v npm >/dev/null || { log "npm is required"; exit 1; }

HASH="$(sha256sum package-lock.json | cut -c1-16)"
ROOT="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}"
CACHE="$ROOT/copilotkit-$HASH"

if [ ! -f "$CACHE/.installed" ]; then
  log "installing the CopilotKit packages into $CACHE (once per lockfile)"
  mkdir -p "$ROOT"
  TMP="$(mktemp -d "$ROOT/copilotkit-tmp.XXXXXX")"
  trap 'rm -rf "$TMP"' EXIT
  cp package.json package-lock.json "$TMP/"
  (cd "$TMP" && npm ci --no-audit --no-fund --loglevel=error >&2)
  touch "$TMP/.installed"
  rm -rf "$CACHE"
  mv "$TMP" "$CACHE" # whole or not at all: a killed install leaves no half cache
  trap - EXIT
fi

# A real node_modules (from a manual npm install) is left alone.
if [ -L node_modules ] || [ ! -e node_modules ]; then
  ln -sfn "$CACHE/node_modules" node_modules
fi

log "bundling src/ into dist/"
rm -rf dist
mkdir -p dist
node_modules/.bin/esbuild src/main.jsx --bundle --outdir=dist --format=esm --jsx=automatic \
  --minify --define:process.env.NODE_ENV='"production"' \
  --loader:.woff=file --loader:.woff2=file --loader:.ttf=file --log-level=warning
cp src/index.html dist/
log "built $(du -sh dist | cut -f1) in dist/"
