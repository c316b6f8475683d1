#!/bin/sh
# Goal 1 of issue 14: the wall time of the hook client per commit, as svn
# and p4d see it (one process, bare environment, start to exit), against
# the minimal signed Go client (scripts/benchnotify/minclient) measured in
# the same rounds, with the daemon up (202) and down (spooled). Binaries
# are built as `make build` builds them. Usage: scripts/bench-notify.sh [N]
set -eu
N=${1:-${N:-40}}
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
work=$(mktemp -d)
daemon_pid=
trap '[ -n "$daemon_pid" ] && kill $daemon_pid 2>/dev/null; rm -rf "$work"' EXIT
build() { CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/$1" "$2"; }
build aicr ./cmd/aicr
build aicr-notify ./cmd/aicr-notify
build minclient ./scripts/benchnotify/minclient
build run ./scripts/benchnotify/run
build p4 ./internal/p4emu/p4
svnadmin create "$work/repo"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret"
cat > "$work/aicr.toml" <<CFG
[daemon]
listen = "127.0.0.1:$port"
data_dir = "$work/data"
secret_file = "$work/secret"
[[repo]]
name = "bench"
kind = "svn"
local_path = "$work/repo"
reconcile_every = "off"
[[repo]]
name = "depot"
kind = "p4"
port = "localhost:1666"
user = "aicr"
p4_path = "$work/p4"
depot_paths = ["//depot/main/..."]
reconcile_every = "off"
CFG

inittime() { # binary args...: sum of package init times, ms
	GODEBUG=inittrace=1 "$@" 2>&1 >/dev/null | awk '/^init /{ s += $5 } END { printf "%.2f", s }'
}
echo "hook client per commit, $(nproc) cores; load before: $(uptime | sed 's/.*load average: //')"
echo "package init (GODEBUG=inittrace=1): aicr $(inittime "$work/aicr" version) ms," \
	"aicr-notify $(inittime "$work/aicr-notify" version) ms," \
	"minimal client $(inittime "$work/minclient" x x x x x x) ms"
echo "binary size: aicr $(($(stat -c %s "$work/aicr") / 1048576)) MB, aicr-notify $(($(stat -c %s "$work/aicr-notify") / 1048576)) MB," \
	"minimal client $(($(stat -c %s "$work/minclient") / 1048576)) MB"

run() { # phase first_rev
	"$work/run" -n "$N" -phase "$1" -rev "$2" -min "$work/minclient" -notify "$work/aicr-notify" -aicr "$work/aicr" \
		-config "$work/aicr.toml" -url "http://127.0.0.1:$port" -secret "$work/secret" -min-spool "$work/minspool" \
		-svn-repo "$work/repo" -svn-name bench -p4-name depot
}

"$work/aicr" daemon --config "$work/aicr.toml" 2>"$work/daemon.log" &
daemon_pid=$!
i=0
until curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
	i=$((i+1)); [ $i -gt 200 ] && { cat "$work/daemon.log"; exit 1; }; sleep 0.05
done
run "daemon up (202)" 1
kill $daemon_pid; wait $daemon_pid 2>/dev/null || true; daemon_pid=
run "daemon down (spooled)" 100000
spooled=$(ls "$work/data/spool" | grep -c '\.json$' || true)
echo
echo "spooled by aicr/aicr-notify while down: $spooled (expected $((N * 5)))"
echo "load after: $(uptime | sed 's/.*load average: //')"
