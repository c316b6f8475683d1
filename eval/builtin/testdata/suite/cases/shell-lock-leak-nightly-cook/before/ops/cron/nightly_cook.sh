#!/bin/bash
# nightly_cook.sh - cooks content for every platform; started by cron at 01:00.
set -euo pipefail

ENGINE=/opt/engine/current
PROJECT=/srv/p4/studio-main/Game/Game.uproject
LOGDIR=/var/log/cook
PLATFORMS=(Windows PS5 XSX)

mkdir -p "$LOGDIR"
for platform in "${PLATFORMS[@]}"; do
    "$ENGINE/Engine/Binaries/Linux/UnrealEditor-Cmd" "$PROJECT" -run=cook \
        -targetplatform="$platform" -unattended -nop4 \
        >"$LOGDIR/cook-$platform-$(date +%F).log" 2>&1
done
