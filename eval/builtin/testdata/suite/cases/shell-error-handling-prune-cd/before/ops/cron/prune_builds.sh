#!/bin/bash
# prune_builds.sh - nightly cron on the build server: keep the newest
# KEEP builds of every branch under /srv/builds/<branch>/<build>.
set -uo pipefail

BUILD_ROOT=/srv/builds
KEEP=${KEEP:-10}

log() { logger -t prune_builds "$*"; }

for branch_dir in "$BUILD_ROOT"/*/; do
    branch=$(basename "$branch_dir")
    mapfile -t builds < <(ls -1t "$branch_dir")
    if (( ${#builds[@]} <= KEEP )); then
        continue
    fi
    for old in "${builds[@]:KEEP}"; do
        log "removing $branch/$old"
        rm -rf -- "${branch_dir:?}${old:?}"
    done
done
