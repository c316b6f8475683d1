#!/bin/sh
# aicr's pre-remove, for the .deb (prerm remove|upgrade|deconfigure|...)
# and the .rpm (%preun 0 on erase, 1 on upgrade). An upgrade keeps the
# service running; the post-install restarts it on the new binary.
set -e
case "$1" in
remove | deconfigure | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now aicr.service || true
	fi
	;;
esac
exit 0
