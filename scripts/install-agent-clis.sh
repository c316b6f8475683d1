#!/bin/sh
# Installs every agent CLI at its pinned version into the cache the tests
# use (AICR_CLI_CACHE, default /var/cache/aicr/agent-clis) with
# `aicr agent install`, one after another, so the test packages that run
# them in parallel find them installed. An install that finished is kept.
set -eu
aicr=$1
dir=${AICR_CLI_CACHE:-/var/cache/aicr/agent-clis}
for kind in claude-code codex opencode kilo qwen-code gemini-cli; do
	"$aicr" agent install "$kind" --dir "$dir" >/dev/null
done
echo "agent CLIs installed in $dir"
