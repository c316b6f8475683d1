#!/bin/sh
# Prints aicr's own overhead per llm review against a builtin review of the
# same change (10 new files, 300 added lines), for each model API: the
# medians of COUNT runs of BenchmarkLLMOverhead (agent/llm). The model
# server is the scripted one answering from memory; its time is measured
# on the server side and subtracted, so "aicr ms" is everything but the
# model: prompt, SDK, HTTP client side, tool calls, ladder, builtin
# pre-pass and merge. The builtin review is all of it (no model).
# Usage: scripts/bench-llm-overhead.sh [count, default 5] [benchtime, default 20x]
set -eu
cd "$(dirname "$0")/.."
count=${1:-5}
benchtime=${2:-20x}
go test -run '^$' -bench 'BenchmarkLLMOverhead' -count "$count" -benchtime "$benchtime" ./agent/llm |
awk '
function median(key,   n, i, j, t, a) {
	n = cnt[key]
	for (i = 1; i <= n; i++) a[i] = val[key, i]
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
/^BenchmarkLLMOverhead\// {
	split($1, p, "/"); api = p[2]; sub(/-[0-9]+$/, "", api)
	if (!(api in seen)) { seen[api] = 1; order[++apis] = api }
	for (i = 5; i < NF; i += 2) { k = api SUBSEP $(i+1); val[k, ++cnt[k]] = $i }
}
/^(FAIL|---|panic)/ { print > "/dev/stderr"; failed = 1 }
END {
	if (failed) exit 1
	printf "%-17s %12s %10s %10s %10s %10s\n", "api", "builtin ms", "llm ms", "model ms", "aicr ms", "aicr/builtin"
	for (i = 1; i <= apis; i++) {
		a = order[i]
		printf "%-17s %12.1f %10.1f %10.1f %10.1f %10.2f\n", a, median(a SUBSEP "builtin-ms"), median(a SUBSEP "llm-ms"),
			median(a SUBSEP "model-ms"), median(a SUBSEP "aicr-ms"), median(a SUBSEP "overhead-x")
	}
	printf "(medians of %d runs; ms per review)\n", cnt[order[1] SUBSEP "overhead-x"]
}'
