#!/bin/sh
# Installs what `make demo` and `make test` need on a fresh Debian/Ubuntu
# machine: Subversion (the real svnadmin/svn/svnlook/svnserve the tests and
# the demo drive), PostgreSQL (the server binaries the store tests start in
# a temp dir), Chromium (the web page's browser tests) and a Go toolchain; with the argument `podman`, also
# Podman and runc for the sandbox (`make image`, `make test`); with
# `mmdebstrap`, also mmdebstrap (`make image-node`); with `npm`, Node.js
# and npm (`make agent-clis`). Run as root
# to install; otherwise it only says what is missing.
set -eu

missing=""
pkgs_missing=""
for tool in svn svnadmin svnlook svnserve; do
	command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -n "$missing" ] && pkgs_missing="subversion"
# make test runs the race detector, which needs cgo and a C compiler.
if ! command -v cc >/dev/null 2>&1; then
	missing="$missing cc"
	pkgs_missing="$pkgs_missing gcc"
fi
# The PostgreSQL store's tests start a real server (initdb/pg_ctl) of
# Debian's postgresql package in a temp dir (internal/pgtest).
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
	missing="$missing initdb"
	pkgs_missing="$pkgs_missing postgresql"
fi
# The web page's tests drive a real headless browser (web/, chromedp):
# Debian's chromium.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
	missing="$missing chromium"
	pkgs_missing="$pkgs_missing chromium"
fi
if [ "${1:-}" = podman ]; then
	# runc, not crun: crun fails on cgroup v1 hybrid hosts (see
	# configs/containers.conf). runc lives in sbin, often not in PATH.
	command -v podman >/dev/null 2>&1 || { missing="$missing podman"; pkgs_missing="$pkgs_missing podman"; }
	if ! command -v runc >/dev/null 2>&1 && [ ! -x /usr/sbin/runc ] && [ ! -x /usr/bin/runc ]; then
		missing="$missing runc"
		pkgs_missing="$pkgs_missing runc"
	fi
fi
for arg in "$@"; do
	if [ "$arg" = mmdebstrap ] && ! command -v mmdebstrap >/dev/null 2>&1; then
		missing="$missing mmdebstrap"
		pkgs_missing="$pkgs_missing mmdebstrap"
	fi
	# npm fetches the agent CLIs (`aicr agent install`); they run on the
	# image's Node, not this one.
	if [ "$arg" = npm ] && ! command -v npm >/dev/null 2>&1; then
		missing="$missing npm"
		pkgs_missing="$pkgs_missing nodejs npm"
	fi
done
need_go=""
if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
	need_go=yes
fi

if [ -z "$missing" ] && [ -z "$need_go" ]; then
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	[ -n "$missing" ] && echo "missing:$missing — install with: sudo apt-get install -y$pkgs_missing" >&2
	[ -n "$need_go" ] && echo "missing: go — install Go 1.26 or newer (https://go.dev/doc/install) or: sudo apt-get install -y golang-go" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
pkgs="$pkgs_missing"
# Debian's Go is older than go.mod asks for; the go command then fetches
# the right toolchain itself (GOTOOLCHAIN=auto).
[ -n "$need_go" ] && pkgs="$pkgs golang-go ca-certificates"
# shellcheck disable=SC2086
apt-get install -y -qq $pkgs >/dev/null
echo "installed:$pkgs" >&2
