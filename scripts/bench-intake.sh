#!/bin/sh
# Intake throughput (issue 14, goal 2) and idle daemon RSS (goal 5, first
# half). A real daemon (real SQLite file, synchronous=FULL, so every 202 is
# fsynced) reviews PRELOAD one-file svn revisions with builtin and 2
# workers while scripts/benchintake posts new signed events from 1, 8 and
# 64 concurrent keep-alive clients, ROUNDS rounds alternating the counts.
# Prints median events/s per client count, the ratio to the 5,000/s goal,
# and the daemon's RSS idle (before any event) against the 20 MB goal.
# Usage: scripts/bench-intake.sh   (env: ROUNDS=5 DURATION=2s PRELOAD=3000)
set -eu
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-2s}
PRELOAD=${PRELOAD:-3000}
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
work=$(mktemp -d)
daemon_pid=
trap 'if [ -n "$daemon_pid" ]; then kill $daemon_pid 2>/dev/null || true; wait $daemon_pid 2>/dev/null || true; fi; rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -o "$work/aicr" ./cmd/aicr
go build -o "$work/benchintake" ./scripts/benchintake
svnadmin create "$work/repo"
"$work/benchintake" -dump "$PRELOAD" | svnadmin load -q "$work/repo"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret"
cat > "$work/aicr.toml" <<CFG
[daemon]
listen = "127.0.0.1:$port"
data_dir = "$work/data"
secret_file = "$work/secret"
workers = 2
aicr_binary = "$work/aicr"
[[repo]]
name = "bench"
kind = "svn"
local_path = "$work/repo"
reconcile_every = "off"
CFG

"$work/aicr" daemon --config "$work/aicr.toml" 2>"$work/daemon.log" &
daemon_pid=$!
i=0
until curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
	i=$((i+1)); [ $i -gt 200 ] && { cat "$work/daemon.log"; exit 1; }; sleep 0.05
done
sleep 2 # let start-up work settle before reading the idle RSS
idle=$(awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s ", $2 }' /proc/$daemon_pid/status)
echo "intake: $(nproc) cores, load: $(uptime | sed 's/.*load average: //'), rounds $ROUNDS x $DURATION, $PRELOAD revisions queued for 2 builtin workers"
# RssFile is the binary's own pages (clean, shared page cache, which the
# kernel maps around every page init touches); RssAnon is the daemon's heap
# and stacks.
echo "$idle" | awk '{ printf "idle daemon RSS %.1f MB vs goal 20 MB: %.2fx (anonymous %.1f MB, binary pages %.1f MB)\n", $1/1024, $1/1024/20, $2/1024, $3/1024 }'
"$work/benchintake" -url "http://127.0.0.1:$port" -secret-file "$work/secret" -repo bench \
	-clients 1,8,64 -rounds "$ROUNDS" -duration "$DURATION" -pid "$daemon_pid" -preload "$PRELOAD"
if command -v sqlite3 >/dev/null; then
	sqlite3 "file:$work/data/aicr.db?mode=ro" "SELECT 'workers during the run: ' || sum(status NOT IN ('queued','running')) || ' preloaded reviews finished, ' || sum(status = 'queued') || ' still queued' FROM runs WHERE CAST(revision AS INTEGER) <= $PRELOAD" 2>/dev/null || true
fi
echo "load after: $(uptime | sed 's/.*load average: //')"
