#!/bin/sh
# Intake throughput (issue 14, goal 2) and idle daemon RSS (goal 5, first
# half). A real daemon (real SQLite file, synchronous=FULL, so every 202 is
# fsynced) reviews PRELOAD one-file svn revisions with builtin and 2
# workers while scripts/benchintake posts new signed events from 1, 8 and
# 64 concurrent keep-alive clients, ROUNDS rounds alternating the counts.
# Prints median events/s per client count, the ratio to the 5,000/s goal,
# and the daemon's RSS idle (before any event) against the 20 MB goal.
# With BASE=<git revision>, a daemon built from that revision runs beside
# it under the same load (its own queue, its own 2 busy workers) and the
# rounds alternate between the two: the ratio column is this build against
# that one, measured in the same run.
# Usage: scripts/bench-intake.sh   (env: ROUNDS=5 DURATION=2s PRELOAD=3000 BASE= IDLE_WAIT=125)
set -eu
BASE=${BASE:-}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-2s}
PRELOAD=${PRELOAD:-3000}
IDLE_WAIT=${IDLE_WAIT:-125}
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
work=$(mktemp -d)
daemon_pid=
base_pid=
trap 'for p in $daemon_pid $base_pid; do kill $p 2>/dev/null || true; wait $p 2>/dev/null || true; done; rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -o "$work/aicr" ./cmd/aicr
if [ -n "$BASE" ]; then
	mkdir "$work/base"
	git archive "$BASE" | tar -x -C "$work/base"
	(cd "$work/base" && CGO_ENABLED=0 go build -o "$work/aicr-base" ./cmd/aicr)
fi
go build -o "$work/benchintake" ./scripts/benchintake
svnadmin create "$work/repo"
"$work/benchintake" -dump "$PRELOAD" | svnadmin load -q "$work/repo"
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret"
config() { # binary port data_dir
	cat <<CFG
[daemon]
listen = "127.0.0.1:$2"
data_dir = "$3"
secret_file = "$work/secret"
workers = 2
aicr_binary = "$1"
[[repo]]
name = "bench"
kind = "svn"
local_path = "$work/repo"
reconcile_every = "off"
CFG
}
start() { # binary port data_dir log; sets started_pid
	config "$1" "$2" "$3" > "$3.toml"
	"$1" daemon --config "$3.toml" 2>"$4" &
	started_pid=$!
	i=0
	until curl -fs "http://127.0.0.1:$2/healthz" >/dev/null 2>&1; do
		i=$((i+1)); [ $i -gt 200 ] && { cat "$4"; exit 1; }; sleep 0.05
	done
}
rss() { # pid label when
	awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s ", $2 }' /proc/$1/status | awk -v label="$2" -v when="$3" '{
		printf "%s idle daemon RSS %s %.1f MB vs goal 20 MB: %.2fx (anonymous %.1f MB, binary pages %.1f MB)\n", label, when, $1/1024, $1/1024/20, $2/1024, $3/1024 }'
}
port=$(freeport)
start "$work/aicr" "$port" "$work/data" "$work/daemon.log"; daemon_pid=$started_pid
ref=
if [ -n "$BASE" ]; then
	base_port=$(freeport)
	start "$work/aicr-base" "$base_port" "$work/data-base" "$work/daemon-base.log"; base_pid=$started_pid
	ref="-ref-url http://127.0.0.1:$base_port -ref-pid $base_pid -ref-name $BASE"
fi
sleep 2 # let start-up work settle before reading the idle RSS
echo "intake: $(nproc) cores, load: $(uptime | sed 's/.*load average: //'), rounds $ROUNDS x $DURATION, $PRELOAD revisions queued for 2 builtin workers${BASE:+ per daemon, against $BASE}"
# RssFile is the binary's own pages (clean, shared page cache, which the
# kernel maps around every page init touches); RssAnon is the daemon's heap
# and stacks.
rss $daemon_pid "this build:" "2 s after start"
[ -z "$BASE" ] || rss $base_pid "$BASE:" "2 s after start"
# The runtime forces a garbage collection every two minutes, and each one
# reads stack maps and type data spread over the binary: a figure taken at
# one moment can land before or after it, so the idle daemon is sampled
# every second until IDLE_WAIT and the median and the highest are printed.
if [ "$IDLE_WAIT" -gt 2 ]; then
	: >"$work/rss-this"; : >"$work/rss-base"
	i=2
	while [ "$i" -lt "$IDLE_WAIT" ]; do
		sleep 1
		i=$((i + 1))
		awk '/^VmRSS:/ { print $2 }' /proc/$daemon_pid/status >>"$work/rss-this"
		[ -z "$BASE" ] || awk '/^VmRSS:/ { print $2 }' /proc/$base_pid/status >>"$work/rss-base"
	done
	rss $daemon_pid "this build:" "${IDLE_WAIT} s after start"
	[ -z "$BASE" ] || rss $base_pid "$BASE:" "${IDLE_WAIT} s after start"
	spread() { # file label
		sort -n "$1" | awk -v label="$2" -v wait="$IDLE_WAIT" '{ v[NR] = $1 } END {
			printf "%s idle daemon RSS, one sample a second from 3 to %d s: median %.1f MB, highest %.1f MB vs goal 20 MB: %.2fx, %.2fx\n",
				label, wait, v[int((NR + 1) / 2)] / 1024, v[NR] / 1024, v[int((NR + 1) / 2)] / 1024 / 20, v[NR] / 1024 / 20 }'
	}
	spread "$work/rss-this" "this build:"
	[ -z "$BASE" ] || spread "$work/rss-base" "$BASE:"
fi
# shellcheck disable=SC2086 # $ref is a list of flags
"$work/benchintake" -url "http://127.0.0.1:$port" -secret-file "$work/secret" -repo bench \
	-clients 1,8,64 -rounds "$ROUNDS" -duration "$DURATION" -pid "$daemon_pid" -preload "$PRELOAD" $ref
if command -v sqlite3 >/dev/null; then
	sqlite3 "file:$work/data/aicr.db?mode=ro" "SELECT 'workers during the run: ' || sum(status NOT IN ('queued','running')) || ' preloaded reviews finished, ' || sum(status = 'queued') || ' still queued' FROM runs WHERE CAST(revision AS INTEGER) <= $PRELOAD" 2>/dev/null || true
fi
echo "load after: $(uptime | sed 's/.*load average: //')"
