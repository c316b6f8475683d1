#!/bin/sh
# Prints what the Podman sandbox adds per run on this machine, as medians
# of N alternated runs (N = benchtime, default 20):
#   start-to-exit  a trivial pass (sandbox/testdata/probe) in Podman,
#                  network none, against the same process run natively
#                  (BenchmarkPodmanRun, ./sandbox);
#   llm review     one llm review through the ladder, its pass in Podman
#                  with network "llm-only" (the model reached through the
#                  run's egress proxy) against the llm agent in process,
#                  [sandbox] kind = "none" (BenchmarkLLMPassPodman,
#                  ./agent/sandboxed); the model is the scripted server.
# Needs podman and runc; uses configs/containers.conf.
# Usage: scripts/bench-sandbox.sh [runs, default 20]
set -eu
cd "$(dirname "$0")/.."
n=${1:-20}
export CONTAINERS_CONF="$PWD/configs/containers.conf"
{
	go test -run '^$' -bench '^BenchmarkPodmanRun$' -benchtime "${n}x" ./sandbox
	go test -run '^$' -bench '^BenchmarkLLMPassPodman$' -benchtime "${n}x" ./agent/sandboxed
} | awk -v n="$n" '
function metric(name,   i) { for (i = 3; i < NF; i++) if ($(i+1) == name) return $i; return "" }
/^BenchmarkPodmanRun/ { trivial = sprintf("%-30s %10.1f %10.1f %12.1f %8.1f", "start-to-exit (trivial pass)", metric("podman-ms"), metric("none-ms"), metric("podman-ms") - metric("none-ms"), metric("ratio")) }
/^BenchmarkLLMPassPodman/ { llm = sprintf("%-30s %10.1f %10.1f %12.1f %8.1f", "llm review, llm-only egress", metric("podman-ms"), metric("native-ms"), metric("overhead-ms"), metric("ratio")) }
/^(FAIL|---|panic)/ { print > "/dev/stderr"; failed = 1 }
END {
	if (failed || trivial == "" || llm == "") exit 1
	printf "%-30s %10s %10s %12s %8s\n", "", "podman ms", "native ms", "overhead ms", "ratio"
	print trivial
	print llm
	printf "(medians of %d alternated runs)\n", n
}'
