#!/bin/bash
# backup_p4.sh - nightly checkpoint of the Perforce server, copied to the NAS.
set -euo pipefail

P4ROOT=/p4/1/root
CHECKPOINTS=/p4/1/checkpoints
NAS=/mnt/nas/p4-backups
KEEP_LOCAL=${KEEP_LOCAL:-7}

log() { logger -t backup_p4 "$*"; echo "$*"; }

log "creating checkpoint"
p4d -r "$P4ROOT" -jc -Z "$CHECKPOINTS/studio"

latest=$(ls -1t "$CHECKPOINTS"/studio.ckp.*.gz | head -n 1)
log "copying $latest to $NAS"
cp -- "$latest" "$NAS/.incoming.$$"
# Verify the copy before it replaces anything: a truncated checkpoint on the
# NAS is worse than yesterday's.
if ! gzip -t "$NAS/.incoming.$$"; then
    rm -f -- "$NAS/.incoming.$$"
    log "copy of $latest failed verification"
    exit 1
fi
mv -- "$NAS/.incoming.$$" "$NAS/$(basename -- "$latest")"

# Local checkpoints and their journals: keep the newest KEEP_LOCAL.
mapfile -t old < <(ls -1t "$CHECKPOINTS"/studio.ckp.*.gz | tail -n +"$((KEEP_LOCAL + 1))")
for f in "${old[@]}"; do
    log "removing local $f"
    rm -f -- "$f" "$f.md5"
done
