#!/usr/bin/env bash
# Builds the MCP Apps host page e2e/mcpapps_test.go drives: installs the
# pinned packages (npm ci from package-lock.json; the npm cache makes repeat
# runs offline) and bundles src/ into dist/ with esbuild.
# Usage: e2e/testdata/mcpapps-host/build.sh
set -euo pipefail
cd "$(dirname "$0")"
npm ci --prefer-offline --no-audit --no-fund --loglevel=error
rm -rf dist
mkdir -p dist
npx --no-install esbuild src/host.js --bundle --format=esm --target=es2022 --log-level=warning --outfile=dist/host.js
cp src/index.html dist/index.html
