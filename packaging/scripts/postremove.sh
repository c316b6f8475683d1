#!/bin/sh
# aicr's post-remove, for the .deb (postrm remove|purge|upgrade|...) and
# the .rpm (%postun 0 on erase, 1 on upgrade). The audit database in
# /var/lib/aicr and the aicr account are never removed: the review history
# outlives the package, and files elsewhere may still belong to aicr.
set -e
case "$1" in
purge)
	# dpkg removes the conffile itself; the secret was made by postinst.
	rm -f /etc/aicr/trigger-secret
	rmdir /etc/aicr 2>/dev/null || true
	echo "aicr: purged; /var/lib/aicr (the audit database) and the aicr user are kept"
	;;
esac
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
exit 0
