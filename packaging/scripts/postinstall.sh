#!/bin/sh
# aicr's post-install, for the .deb (postinst configure [OLD-VERSION]) and
# the .rpm (%post 1 on install, 2 on upgrade).
set -e

nologin=/usr/sbin/nologin
[ -x "$nologin" ] || nologin=/sbin/nologin
getent group aicr >/dev/null || groupadd --system aicr
getent passwd aicr >/dev/null ||
	useradd --system --gid aicr --home-dir /var/lib/aicr --no-create-home \
		--shell "$nologin" --comment "aicr code review daemon" aicr

# The daemon (user aicr) and the account svn or p4d runs the hook as (the
# admin adds it to group aicr) read the config and the trigger secret;
# nobody else does. A file still root:root (just unpacked, or never
# changed) gets group aicr; a group the admin chose is left alone, since a
# hook may read through it. World access is always taken away.
fix() { # fix PATH MODE
	[ -e "$1" ] || return 0
	if [ "$(stat -c %U:%G "$1")" = root:root ]; then
		chgrp aicr "$1"
		chmod "$2" "$1"
	fi
	chmod o-rwx "$1"
}
[ -d /etc/aicr ] || install -d -m 0750 -o root -g aicr /etc/aicr
fix /etc/aicr 0750
fix /etc/aicr/aicr.toml 0640
if [ ! -e /etc/aicr/trigger-secret ]; then
	# The example config's [daemon] secret_file: 32 random bytes, base64.
	(umask 077 && head -c 32 /dev/urandom | base64 >/etc/aicr/trigger-secret.new)
	mv /etc/aicr/trigger-secret.new /etc/aicr/trigger-secret
fi
fix /etc/aicr/trigger-secret 0640

# data_dir without systemd (StateDirectory= makes it under systemd), and
# the example's [notify] spool_dir: hooks in group aicr write events there
# (setgid, so spooled files stay readable by the daemon), the daemon
# drains it.
# data_dir is the daemon's alone: the hook's account is in group aicr.
[ -d /var/lib/aicr ] || install -d -m 0700 -o aicr -g aicr /var/lib/aicr
chmod go-rwx /var/lib/aicr
[ -d /var/spool/aicr ] || install -d -m 2770 -o root -g aicr /var/spool/aicr

upgrade=no
case "$1" in
configure) [ -n "$2" ] && upgrade=yes ;;
[2-9]) upgrade=yes ;;
esac
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
	if [ "$upgrade" = yes ]; then
		systemctl try-restart aicr.service || true
	fi
fi
if [ "$upgrade" = no ]; then
	cat <<'MSG'
aicr: installed. Next (README, "Install"): point [[repo]] in
/etc/aicr/aicr.toml at your repository, add the account svn runs hooks as
to group aicr, install the hook, then: systemctl enable --now aicr
MSG
fi
exit 0
