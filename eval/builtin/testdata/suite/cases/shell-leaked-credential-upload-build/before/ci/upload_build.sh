#!/bin/sh
# upload_build.sh - pushes a packaged build to the QA download bucket.
# usage: upload_build.sh PACKAGE_DIR BUILD_ID
set -eu

PKG_DIR="$1"
BUILD_ID="$2"
BUCKET="s3://studio-qa-builds"

if [ ! -d "$PKG_DIR" ]; then
    echo "upload_build: $PKG_DIR is not a directory" >&2
    exit 2
fi

# The agent's instance role grants s3:PutObject on the QA bucket.
aws s3 sync --only-show-errors "$PKG_DIR" "$BUCKET/$BUILD_ID/"
aws s3 cp --only-show-errors - "$BUCKET/latest.txt" <<EOF
$BUILD_ID
EOF
echo "uploaded $BUILD_ID"
