#!/bin/sh
# systemctl as scripts/test-install.sh needs it where systemd cannot run
# units (its namespace; CI containers). Installed there with @STATE@
# replaced by the run's scratch directory. It does what systemd would do
# for aicr.service's start: create StateDirectory= (owned by User=, mode
# StateDirectoryMode=), then run ExecStart= as User=/Group= with their
# supplementary groups, no new privileges, UMask=, a clean environment
# and / as working directory. Sandboxing directives (ProtectSystem= and
# the rest) are not applied; systemd-analyze verify checks the unit.
# Every call is logged to @STATE@/systemctl.log.
set -eu
state=@STATE@
echo "systemctl $*" >>"$state/systemctl.log"

unit_file() {
	for d in /etc/systemd/system /usr/lib/systemd/system /lib/systemd/system; do
		if [ -f "$d/$1.service" ]; then
			echo "$d/$1.service"
			return 0
		fi
	done
	return 1
}
key() { sed -n "s/^$2=//p" "$1" | tail -n 1; }
alive() { # not a zombie: this namespace's init does not reap orphans
	[ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat")" != Z ]
}
running() { [ -f "$state/units/$1.pid" ] && alive "$(cat "$state/units/$1.pid")"; }

start() {
	running "$1" && return 0
	f=$(unit_file "$1") || { echo "Unit $1.service not found." >&2; exit 5; }
	user=$(key "$f" User)
	group=$(key "$f" Group)
	home=$(getent passwd "$user" | cut -d: -f6)
	sd=$(key "$f" StateDirectory)
	if [ -n "$sd" ]; then
		install -d -m "$(key "$f" StateDirectoryMode || true)" -o "$user" -g "$group" "/var/lib/$sd" 2>/dev/null ||
			install -d -m 0755 -o "$user" -g "$group" "/var/lib/$sd"
	fi
	umask_value=$(key "$f" UMask)
	exec_start=$(key "$f" ExecStart)
	(
		cd /
		umask "${umask_value:-0022}"
		exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME="$home" USER="$user" LOGNAME="$user" LANG=C.UTF-8 \
			setpriv --reuid="$user" --regid="$group" --init-groups --no-new-privs -- \
			$exec_start
	) >>"$state/units/$1.log" 2>&1 </dev/null &
	echo $! >"$state/units/$1.pid"
}

stop() {
	running "$1" || return 0
	pid=$(cat "$state/units/$1.pid")
	kill -TERM "$pid"
	i=0
	while alive "$pid"; do
		i=$((i + 1))
		[ "$i" -le 900 ] || { kill -KILL "$pid"; break; }
		sleep 0.1
	done
	rm -f "$state/units/$1.pid"
}

now=no quiet=no cmd="" units=""
for a in "$@"; do
	case "$a" in
	--now) now=yes ;;
	--quiet | -q) quiet=yes ;;
	-*) ;;
	*) if [ -z "$cmd" ]; then cmd=$a; else units="$units ${a%.service}"; fi ;;
	esac
done
for u in $units; do
	case "$cmd" in
	start) start "$u" ;;
	stop) stop "$u" ;;
	restart) stop "$u" && start "$u" ;;
	try-restart) if running "$u"; then stop "$u" && start "$u"; fi ;;
	reload) running "$u" && kill -HUP "$(cat "$state/units/$u.pid")" ;;
	enable)
		unit_file "$u" >/dev/null || { echo "Unit $u.service not found." >&2; exit 5; }
		touch "$state/units/$u.enabled"
		[ "$now" = no ] || start "$u"
		;;
	disable)
		rm -f "$state/units/$u.enabled"
		[ "$now" = no ] || stop "$u"
		;;
	is-active)
		if running "$u"; then [ "$quiet" = yes ] || echo active; else
			[ "$quiet" = yes ] || echo inactive
			exit 3
		fi
		;;
	*) echo "systemctl shim: $cmd not supported" >&2; exit 1 ;;
	esac
done
exit 0
