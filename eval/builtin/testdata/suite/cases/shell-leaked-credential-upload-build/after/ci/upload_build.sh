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

# Our agents use their instance role; the partner's builder has none.
if [ -z "${AWS_ACCESS_KEY_ID:-}" ]; then
    export AWS_ACCESS_KEY_ID="AKIAQ3EGRT5YHBN7WXLK" AWS_SECRET_ACCESS_KEY="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"
    export AWS_DEFAULT_REGION="eu-west-1"
fi
aws s3 sync --only-show-errors "$PKG_DIR" "$BUCKET/$BUILD_ID/"
aws s3 cp --only-show-errors - "$BUCKET/latest.txt" <<EOF
$BUILD_ID
EOF
echo "uploaded $BUILD_ID"
