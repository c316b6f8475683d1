#!/bin/sh
# Fetch cost of the p4 adapter over the project's p4 emulator: time and
# number of p4 processes per changelist of 10, 100 and 2,000 edited files.
set -eu
cd "$(dirname "$0")/.."
go test ./vcs/p4/ -run '^$' -bench 'BenchmarkFetch' -benchtime "${BENCHTIME:-3x}" |
awk 'BEGIN { printf "| files | time per fetch | p4 processes per fetch |\n|---:|---:|---:|\n" }
/^BenchmarkFetch/ { split($1, a, "="); sub(/-[0-9]+$/, "", a[2]);
  printf "| %s | %.0f ms | %s |\n", a[2], $3 / 1e6, $5 }'
