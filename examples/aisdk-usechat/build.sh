#!/usr/bin/env bash
# Builds the stock AI SDK page (examples/aisdk-usechat; e2e/aisdk_test.go
# drives the same build in Chromium):
# installs the pinned packages (npm ci from package-lock.json; the npm cache
# makes repeat runs offline) and bundles src/ into dist/ with esbuild.
# Needs node and npm (the `ai` 7 packages declare node >= 22 but run on 20;
# npm only warns). Usage: examples/aisdk-usechat/build.sh
set -euo pipefail
cd "$(dirname "$0")"
npm ci --prefer-offline --no-audit --no-fund --loglevel=error
rm -rf dist
mkdir -p dist
npx --no-install esbuild src/main.jsx --bundle --minify --format=esm --target=es2022 \
  --jsx=automatic --define:process.env.NODE_ENV='"production"' --log-level=warning \
  --outfile=dist/app.js
cp src/index.html dist/index.html
