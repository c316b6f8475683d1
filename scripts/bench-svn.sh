#!/bin/sh
# Issue 14, goals 4 and 5 (second half): Subversion fetch.
#
# Prints, per access mode (url: the svn client over file://; local_path:
# svnlook on the repository), the median time and child processes of a
# fetch of a 10, 100 and 1,000-file revision and of a 10-line edit to a
# 50 MB file (default caps), read the new way (one svnadmin dump, or one
# svnrdump dump plus one batched svn cat) and the reference way (one cat
# per file, the fallback without svnadmin/svnrdump), measured alternately
# in the same run, with the ratio between them and against the goal.
# Then the peak RSS (fetch process and its svn children) of fetching a
# revision adding 1 GiB of text files, all reviewed, against the 100 MB
# goal, and of the revision adding the 50 MB file, whole.
#
# Usage: scripts/bench-svn.sh [runs, default 3]   (about 4 minutes)
set -eu
cd "$(dirname "$0")/.."
runs=${1:-3}
echo "machine: $(nproc) cores, load $(uptime | sed 's/.*load average: //')"
go test -run '^$' -bench 'BenchmarkFetch' -benchtime 1x -count "$runs" -timeout 60m ./vcs/svn |
awk '
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
function metric(name,   i) { for (i = 4; i < NF; i++) if ($(i+1) == name) return $i; return "" }
/^BenchmarkFetch\// {
	split($1, p, "/"); sub(/-[0-9]+$/, "", p[4])
	k = p[2] SUBSEP p[3] SUBSEP p[4]
	ms[k] = ms[k] " " $3/1e6
	procs[k] = metric("meta-procs/op") + metric("cat-procs/op")
	if (!((p[2] SUBSEP p[3]) in seen)) { seen[p[2] SUBSEP p[3]] = 1; order[++n] = p[2] SUBSEP p[3] }
}
/^BenchmarkFetch(Huge|Gigabyte)\// {
	split($1, p, "/"); sub(/-[0-9]+$/, "", p[2])
	k = p[1] SUBSEP p[2]
	rss[k] = rss[k] " " metric("peak-MiB"); rms[k] = rms[k] " " $3/1e6
	rprocs[k] = metric("meta-procs/op") + metric("cat-procs/op")
	if (!(k in rseen)) { rseen[k] = 1; rorder[++rn] = k }
}
/^(FAIL|ok|---|panic)/ { print > "/dev/stderr" }
END {
	goal["1000"] = 500; goal["edit50MB"] = 1000
	printf "%-10s %-9s %10s %6s %12s %6s %9s %8s %11s\n", "mode", "revision", "dump ms", "procs", "per-file ms", "procs", "ratio", "goal ms", "vs goal"
	for (i = 1; i <= n; i++) {
		split(order[i], q, SUBSEP)
		d = median(ms[order[i] SUBSEP "dump"]); r = median(ms[order[i] SUBSEP "per-file"])
		g = (q[2] in goal) ? goal[q[2]] : 0
		printf "%-10s %-9s %10.1f %6d %12.1f %6d %8.3fx %8s %11s\n", q[1], q[2], d, procs[order[i] SUBSEP "dump"], r, procs[order[i] SUBSEP "per-file"], d / r,
			g ? g : "-", g ? sprintf("%.2fx", d / g) : "-"
	}
	printf "\n%-10s %-24s %10s %6s %12s %8s %11s\n", "mode", "revision", "fetch ms", "procs", "peak RSS MiB", "goal MiB", "vs goal"
	for (i = 1; i <= rn; i++) {
		split(rorder[i], q, SUBSEP)
		what = q[1] == "BenchmarkFetchGigabyte" ? "adds 1 GiB (64 files)" : "adds one 50 MB file"
		m = median(rss[rorder[i]])
		printf "%-10s %-24s %10.1f %6d %12.1f %8s %11s\n", q[2], what, median(rms[rorder[i]]), rprocs[rorder[i]], m,
			q[1] == "BenchmarkFetchGigabyte" ? 100 : "-", q[1] == "BenchmarkFetchGigabyte" ? sprintf("%.2fx", m / 100) : "-"
	}
}'
