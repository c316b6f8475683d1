#!/bin/sh
# Prints what one review's prompt costs per model API (issue 25): a review
# that reports 10 problems one report_problem per answer (11 requests, a
# prompt of about 7k tokens), through the real llm agent and SDKs against
# modelsim's simulated prompt caches (BenchmarkCost in agent/llm). Token
# counts are modelsim's (bytes/4 of each part's canonical JSON), so the
# figures are exact and the same on every machine.
#   before  [agent.llm] prompt_cache = false
#   after   prompt_cache = true (the default)
#   once    a model that makes every call in one answer
# billed/prompt weighs input as the providers bill it: Anthropic uncached
# + 0.1 x cache reads + 1.25 x cache writes; OpenAI uncached + 0.5 x cached.
# Usage: scripts/bench-cost.sh
set -eu
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'BenchmarkCost' -benchtime 1x ./agent/llm |
awk '
/^BenchmarkCost\// {
	split($1, p, "/"); api = p[2]; mode = p[3]; sub(/-[0-9]+$/, "", mode)
	row = api " " mode; rows[++n] = row; r_api[n] = api; r_mode[n] = mode
	for (i = 3; i < NF; i += 2) v[n, $(i+1)] = $i
}
/^(FAIL|---|panic)/ { print > "/dev/stderr"; failed = 1 }
END {
	if (failed || n == 0) exit 1
	printf "%-17s %-7s %9s %8s %9s %9s %9s %9s %14s\n", "api", "mode", "requests", "prompt", "sent", "uncached", "reads", "writes", "billed/prompt"
	for (i = 1; i <= n; i++)
		printf "%-17s %-7s %9d %8d %9d %9d %9d %9d %14.2f\n", r_api[i], r_mode[i], v[i, "requests"], v[i, "prompt-tok"],
			v[i, "sent-tok"], v[i, "uncached-tok"], v[i, "read-tok"], v[i, "write-tok"], v[i, "billed-x"]
	print "(tokens as modelsim counts them; one review pass each)"
}'
