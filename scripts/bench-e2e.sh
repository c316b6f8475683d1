#!/bin/sh
# Prints the end-to-end benchmark (issue 14 goal 6): commit → file-channel
# message with the builtin agent and the hook `aicr install svn-hook`
# writes, median of 20 commits, split into commit / hook / queue / fetch /
# review / dispatch from the audit timestamps (svn:date, events.received_at,
# runs.started_at, change.json's mtime, runs.finished_at,
# dispatches.sent_at). This tree's aicr against a reference aicr built
# from BENCH_REF, commits alternating between the two installations.
# Usage: scripts/bench-e2e.sh [commits, default 20]
# Env: BENCH_REF (git commit).
set -eu
cd "$(dirname "$0")/.."
. scripts/bench-ref.sh
go run ./scripts/benchreview e2e -ref "$ref_bin" -cand "$cand_bin" -commits "${1:-20}"
