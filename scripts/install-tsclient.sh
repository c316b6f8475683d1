#!/bin/sh
# Installs the independent MCP client the tests run against `aicr mcp serve`:
# the official MCP TypeScript SDK, at the exact version pinned in
# review/testdata/tsclient/package-lock.json. `make test` calls it; it does
# nothing when node_modules is already there. Without node it installs
# nodejs and npm with apt-get when run as root, and otherwise only says what
# is missing (the test then fails on CI and skips locally).
set -eu

dir="$(cd "$(dirname "$0")/.." && pwd)/review/testdata/tsclient"

if [ -d "$dir/node_modules/@modelcontextprotocol/sdk" ]; then
	exit 0
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "missing: node and npm — install with: sudo apt-get install -y nodejs npm" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq nodejs npm >/dev/null
	echo "installed: nodejs npm" >&2
fi

# npm ci installs exactly what the lock file names and never rewrites it.
npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
