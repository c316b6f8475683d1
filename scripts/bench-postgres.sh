#!/bin/sh
# PostgreSQL store benchmarks (issue 17): reviews per minute with 1, 2 and
# 3 daemons on one database (builtin agent, 2 workers each, N revisions
# spooled by the hook before the daemons start), and the intake's database
# work (Enqueue, 64 concurrent clients, every event durable) on PostgreSQL
# against SQLite, as a ratio. The test harness starts PostgreSQL itself
# (internal/pgtest), with fsync on so both backends pay for durability.
# Usage: scripts/bench-postgres.sh   (env: COMMITS=120 EVENTS=4000)
set -eu
COMMITS=${COMMITS:-120}
EVENTS=${EVENTS:-4000}
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export AICR_PGTEST_FSYNC=on
echo "== reviews per minute, daemons sharing one PostgreSQL"
AICR_BENCH_POSTGRES=1 AICR_BENCH_COMMITS=$COMMITS go test -v -count=1 -timeout 60m \
	-run '^TestBenchPostgresReviewsPerMinute$' ./e2e/ | grep '^daemons='
echo "== intake: Enqueue at 64 clients, events/s"
rate() { go test -count=1 -run '^$' -bench '^BenchmarkEnqueue64Clients$' -benchtime "${EVENTS}x" ./audit/ |
	awk '/events\/s/ { for (i = 1; i <= NF; i++) if ($i == "events/s") print $(i-1) }'; }
sqlite=$(rate)
postgres=$(AICR_TEST_STORE=postgres rate)
echo "sqlite=$sqlite postgres=$postgres" | awk '{ split($1, a, "="); split($2, b, "="); printf "sqlite %.0f events/s, postgres %.0f events/s, postgres/sqlite = %.2f\n", a[2], b[2], b[2] / a[2] }'
