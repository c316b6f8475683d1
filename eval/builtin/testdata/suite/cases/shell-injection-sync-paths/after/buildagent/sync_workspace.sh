#!/bin/bash
# sync_workspace.sh - called by the build agent before every job: brings the
# agent's Perforce workspace to the job's changelist.
#
# usage: sync_workspace.sh CLIENT CHANGELIST [PATHS]
set -euo pipefail

CLIENT="$1"
CL="$2"
PATHS="${3:-}"

if ! [[ "$CL" =~ ^[0-9]+$ ]]; then
    echo "sync_workspace: changelist must be a number, got '$CL'" >&2
    exit 2
fi

export P4CLIENT="$CLIENT"
ROOT=$(p4 -ztag -F %Root client -o)

echo "syncing $CLIENT ($ROOT) to @$CL"
if [[ -n "$PATHS" ]]; then
    specs=""
    for p in $PATHS; do
        specs="$specs $p@$CL"
    done
    eval "p4 -q sync $specs"
else
    p4 -q sync "//$CLIENT/...@$CL"
fi

# Throw away anything the previous job left opened.
if p4 -ztag -F %depotFile opened -C "$CLIENT" | grep -q .; then
    p4 -q revert -k "//$CLIENT/..."
fi

echo "workspace $CLIENT at @$CL"
