#!/bin/sh
# Prints the Subversion fetch benchmark as a table: time and child
# processes per fetch of a 10, 100 and 1,000-file revision, url (svn
# client over file://) vs local_path (svnlook), and the full fetch of the
# revision adding a 50 MB text file (diff, content, diff.patch section) in
# a child process: time, child processes and that process's peak RSS.
# Usage: scripts/bench-svn.sh [benchtime, default 3x]
set -eu
cd "$(dirname "$0")/.."
benchtime=${1:-3x}
go test -run '^$' -bench 'BenchmarkFetch' -benchtime "$benchtime" ./vcs/svn |
awk '
/^BenchmarkFetch\// {
	split($1, p, "/"); sub(/-[0-9]+$/, "", p[3])
	printf "%-11s %6s files  %9.1f ms  %6s meta procs  %6s cat procs\n", p[2], p[3], $3/1e6, $7, $5
}
/^BenchmarkFetchHuge\// {
	split($1, p, "/"); sub(/-[0-9]+$/, "", p[2])
	printf "%-11s  50 MB file %9.1f ms  %6s meta procs  %6s cat procs  peak RSS %s MiB\n", p[2], $3/1e6, $7, $5, $9
}
/^(FAIL|ok|---)/ { print > "/dev/stderr" }'
