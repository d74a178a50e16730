#!/usr/bin/env bash
# Installs the official TypeScript MCP SDK that client.mjs (driven by
# e2e/mcp_oauth_test.go) and tasks.mjs (e2e/mcp_tasks_test.go) run on:
# npm ci from package-lock.json (the npm cache makes repeat runs offline).
# Needs node and npm.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --prefer-offline --no-audit --no-fund --loglevel=error
