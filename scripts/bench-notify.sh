#!/bin/sh
# Wall time of the hook client as svn runs it: one `aicr notify svn`
# process per commit, with the daemon up (delivered) and down (spooled).
# Prints median and p90 over N runs. Usage: scripts/bench-notify.sh [N]
set -eu
N=${1:-50}
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
work=$(mktemp -d)
trap 'kill $daemon_pid 2>/dev/null || true; rm -rf "$work"' EXIT
daemon_pid=
CGO_ENABLED=0 go build -o "$work/aicr" ./cmd/aicr
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
CFG

measure() { # label first_rev
	i=0; : > "$work/times"
	while [ $i -lt "$N" ]; do
		rev=$(( $2 + i ))
		start=$(date +%s%N)
		env -i LC_ALL=C.UTF-8 "$work/aicr" notify svn --config "$work/aicr.toml" --repo bench "$work/repo" "$rev" 2>/dev/null
		end=$(date +%s%N)
		echo $(( (end - start) / 1000 )) >> "$work/times"
		i=$((i + 1))
	done
	sort -n "$work/times" | awk -v label="$1" '{ a[NR] = $1 } END {
		printf "%-28s %6d runs   median %7.2f ms   p90 %7.2f ms\n", label, NR, a[int((NR+1)/2)]/1000, a[int(NR*0.9)]/1000 }'
}

"$work/aicr" daemon --config "$work/aicr.toml" 2>"$work/daemon.log" &
daemon_pid=$!
i=0
until curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
	i=$((i+1)); [ $i -gt 100 ] && { cat "$work/daemon.log"; exit 1; }; sleep 0.05
done
echo "aicr notify svn, one process per call ($(nproc) cores):"
measure "daemon up (202)" 1
kill $daemon_pid; wait $daemon_pid 2>/dev/null || true; daemon_pid=
measure "daemon down (spooled)" 100000
echo "spooled files: $(ls "$work/data/spool" | grep -c '\.json$')"
