#!/bin/sh
# Prints the review pipeline benchmark (issue 14 goal 3): reviews per
# minute and CPU per review for 500 queued 1-file SVN revisions with the
# builtin agent and workers = 2, this tree's aicr against a reference
# aicr built from BENCH_REF (default: the last commit before issue 14,
# when builtin spawned `aicr mcp serve` per review). Trials alternate the
# two daemons; the table holds medians and the candidate/reference ratio.
# Usage: scripts/bench-pipeline.sh [trials, default 3]
# Env: BENCH_REF (git commit), BENCH_REVS (default 500).
set -eu
cd "$(dirname "$0")/.."
. scripts/bench-ref.sh
trials=${1:-3}
go run ./scripts/benchreview pipeline -ref "$ref_bin" -cand "$cand_bin" \
	-revs "${BENCH_REVS:-500}" -trials "$trials" -workers 2
