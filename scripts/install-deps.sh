#!/bin/sh
# Installs what `make demo` and `make test` need on a fresh Debian/Ubuntu
# machine: Subversion (the real svnadmin/svn/svnlook/svnserve the tests and
# the demo drive) and a Go toolchain. Run as root to install; otherwise it
# only says what is missing.
set -eu

missing=""
for tool in svn svnadmin svnlook svnserve; do
	command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
# make test runs the race detector, which needs cgo and a C compiler.
command -v cc >/dev/null 2>&1 || missing="$missing cc"
need_go=""
if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
	need_go=yes
fi

if [ -z "$missing" ] && [ -z "$need_go" ]; then
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	[ -n "$missing" ] && echo "missing:$missing — install with: sudo apt-get install -y subversion gcc" >&2
	[ -n "$need_go" ] && echo "missing: go — install Go 1.26 or newer (https://go.dev/doc/install) or: sudo apt-get install -y golang-go" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
pkgs=""
[ -n "$missing" ] && pkgs="$pkgs subversion gcc"
# Debian's Go is older than go.mod asks for; the go command then fetches
# the right toolchain itself (GOTOOLCHAIN=auto).
[ -n "$need_go" ] && pkgs="$pkgs golang-go ca-certificates"
# shellcheck disable=SC2086
apt-get install -y -qq $pkgs >/dev/null
echo "installed:$pkgs" >&2
