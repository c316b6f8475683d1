#!/bin/bash
# backup_p4.sh - nightly checkpoint of the Perforce server, copied to the NAS.
set -euo pipefail

P4ROOT=/p4/1/root
CHECKPOINTS=/p4/1/checkpoints
NAS=/mnt/nas/p4-backups

log() { logger -t backup_p4 "$*"; echo "$*"; }

log "creating checkpoint"
p4d -r "$P4ROOT" -jc -Z "$CHECKPOINTS/studio"

latest=$(ls -1t "$CHECKPOINTS"/studio.ckp.*.gz | head -n 1)
log "copying $latest to $NAS"
cp -- "$latest" "$NAS/"
