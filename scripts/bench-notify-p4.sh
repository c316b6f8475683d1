#!/bin/sh
# Wall time of `aicr notify p4` (what the change-commit trigger runs, as
# p4d sees it: until the command returns) against a plain curl POST of the
# same signed event, both against a running daemon. Uses hyperfine when it
# is installed, else a loop timed with date +%s%N.
set -eu
cd "$(dirname "$0")/.."
N=${N:-20}
tmp=$(mktemp -d)
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$tmp"' EXIT
go build -o "$tmp/aicr" ./cmd/aicr
go build -o "$tmp/p4" ./vcs/p4/p4emu/p4
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'bench-secret' >"$tmp/secret"
cat >"$tmp/aicr.toml" <<TOML
[daemon]
listen = "127.0.0.1:$port"
data_dir = "data"
secret_file = "secret"
[notify]
spool_dir = "spool"
[[repo]]
name = "depot"
kind = "p4"
port = "localhost:1666"
user = "aicr"
p4_path = "$tmp/p4"
depot_paths = ["//depot/main/..."]
TOML
"$tmp/aicr" daemon --config "$tmp/aicr.toml" >"$tmp/daemon.log" 2>&1 &
daemon=$!
until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null; do sleep 0.1; done

# Each POST needs a fresh change number (the daemon is idempotent per
# change) and a fresh signature (replays are refused).
curl_post() {
  ts=$(date +%s)
  body="{\"v\":1,\"vcs\":\"p4\",\"repo\":\"depot\",\"revision\":\"$1\",\"user\":\"bob\",\"sent_at\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}"
  sig=$(printf '%s.%s' "$ts" "$body" | openssl dgst -sha256 -hmac bench-secret | sed 's/^.*= //')
  curl -sf -o /dev/null -H "X-Aicr-Timestamp: $ts" -H "X-Aicr-Signature: sha256=$sig" \
    -H 'Content-Type: application/json' --data "$body" "http://127.0.0.1:$port/v1/events"
}
notify() {
  env -i PATH=/usr/bin:/bin "$tmp/aicr" notify p4 --config "$tmp/aicr.toml" --repo depot --change "$1" --user bob $2
}

time_loop() { # name start command...
  name=$1; start=$2; shift 2
  t0=$(date +%s%N)
  i=0
  while [ $i -lt "$N" ]; do "$@" $((start + i)); i=$((i + 1)); done
  t1=$(date +%s%N)
  printf '| %s | %d | %.2f ms |\n' "$name" "$N" "$(echo "($t1 - $t0) / $N / 1000000" | bc -l)"
}
nf() { notify "$1" ""; }
nfg() { notify "$1" --foreground; }
echo "| command | runs | mean wall time |"
echo "|---|---:|---:|"
time_loop "curl POST (signed, same event)" 100000 curl_post
time_loop "aicr notify p4 (detached: what p4 submit waits for)" 200000 nf
time_loop "aicr notify p4 --foreground (full delivery)" 300000 nfg
