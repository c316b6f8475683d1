#!/bin/sh
# Builds the Node.js agent image without a registry (`make image-node`):
# a minimal Debian root file system from the machine's own apt mirror
# (mmdebstrap), imported into Podman, with the static aicr binary added.
# Agent CLIs need Node >= 20, so the default suite is trixie (bookworm
# ships Node 18); override with NODE_SUITE.
#
# Usage: build-node-image.sh AICR_BINARY IMAGE:TAG [IMAGE:TAG...]
# Cache: the root file system tarball is kept per suite + package list in
# $AICR_CACHE_DIR (default $XDG_CACHE_HOME/aicr, or /var/cache/aicr as
# root), so a rebuild for a new aicr version only re-imports.
set -eu

binary=$1
shift
suite=${NODE_SUITE:-trixie}
packages=${NODE_PACKAGES:-nodejs,npm,ca-certificates}

mirror=${NODE_MIRROR:-}
if [ -z "$mirror" ] && [ -r /etc/apt/sources.list.d/debian.sources ]; then
	mirror=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
		/etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$mirror" ] && [ -r /etc/apt/sources.list ]; then
	mirror=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/ && $i !~ /security/) { print $i; exit } }' \
		/etc/apt/sources.list)
fi
# An Ubuntu host's archive has no Debian suites: use Debian's own mirror.
case "$mirror" in *ubuntu*) mirror="" ;; esac
mirror=${mirror:-http://deb.debian.org/debian}

if [ -n "${AICR_CACHE_DIR:-}" ]; then
	cache=$AICR_CACHE_DIR
elif [ "$(id -u)" = 0 ]; then
	cache=/var/cache/aicr
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/aicr
fi
mkdir -p "$cache"
key=$(printf '%s %s' "$suite" "$packages" | sha256sum | cut -c1-16)
rootfs="$cache/node-rootfs-$suite-$key.tar"

if [ ! -s "$rootfs" ]; then
	command -v mmdebstrap >/dev/null 2>&1 || {
		echo "mmdebstrap missing: run scripts/install-deps.sh mmdebstrap as root (or apt-get install mmdebstrap)" >&2
		exit 1
	}
	echo "mmdebstrap $suite ($packages) from $mirror" >&2
	tmp="$rootfs.tmp.$$"
	trap 'rm -f "$tmp"' EXIT
	# The tarball is written whole, then renamed: an interrupted build never
	# leaves a truncated cache entry behind.
	mmdebstrap --quiet --variant=minbase --include="$packages" --format=tar \
		"$suite" "$tmp" "$mirror"
	mv "$tmp" "$rootfs"
	trap - EXIT
fi

first=$1
shift
# The runner also bind-mounts the daemon's own binary read-only at
# /opt/aicr/aicr; this copy makes the image usable on its own.
podman import -q \
	--change 'ENV PATH=/opt/aicr:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'USER 65534:65534' \
	--change 'CMD ["node", "--version"]' \
	"$rootfs" "$first.base" >/dev/null
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"; podman rmi -f "$first.base" >/dev/null 2>&1 || true' EXIT
cp "$binary" "$ctx/aicr"
chmod 0755 "$ctx/aicr"
printf 'FROM %s\nCOPY aicr /opt/aicr/aicr\n' "$first.base" >"$ctx/Containerfile"
tags="-t $first"
for t in "$@"; do tags="$tags -t $t"; done
# shellcheck disable=SC2086
podman build -q $tags "$ctx" >/dev/null
echo "built $first ($(podman image inspect --format '{{.Size}}' "$first") bytes)" >&2
