#!/bin/sh
# systemctl as scripts/test-install.sh needs it where systemd cannot run
# units (its namespace; CI containers). Installed there with @STATE@
# replaced by the run's scratch directory. It does what systemd would do
# for aicr.service's start: create StateDirectory= (owned by User=, mode
# StateDirectoryMode=), then run ExecStart= as User=/Group= with their
# supplementary groups, no new privileges, UMask=, a clean environment,
# / as working directory, and, in a mount namespace of its own,
# ProtectSystem=strict with ReadWritePaths= and the StateDirectory
# writable, and PrivateTmp=. The other sandboxing directives are not
# applied; systemd-analyze verify checks the unit.
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
	# The paths the unit may write: ReadWritePaths= (a "-" prefix: only
	# if it exists) and the StateDirectory.
	rw=""
	for p in $(key "$f" ReadWritePaths); do
		case "$p" in -*) p=${p#-} && [ -e "$p" ] || continue ;; esac
		rw="$rw $p"
	done
	[ -z "$sd" ] || rw="$rw /var/lib/$sd"
	umask_value=$(key "$f" UMask)
	exec_start=$(key "$f" ExecStart)
	(
		cd /
		umask "${umask_value:-0022}"
		exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME="$home" USER="$user" LOGNAME="$user" LANG=C.UTF-8 \
			unshare --mount --propagation private \
			sh -c "$sandbox" sandbox "$rw" "$(key "$f" ProtectSystem)" "$(key "$f" PrivateTmp)" \
			setpriv --reuid="$user" --regid="$group" --init-groups --no-new-privs -- \
			$exec_start
	) >>"$state/units/$1.log" 2>&1 </dev/null &
	echo $! >"$state/units/$1.pid"
}

# sandbox applies ProtectSystem=strict (every mount read-only but /dev,
# /proc, /sys and the writable paths, which become mounts of their own
# first) and PrivateTmp= (a fresh /tmp and /var/tmp) in the unit's own
# mount namespace, then runs the rest of its arguments.
# shellcheck disable=SC2016
sandbox='
set -eu
rw=$1 protect=$2 private_tmp=$3
shift 3
for p in $rw; do mount --bind "$p" "$p"; done
if [ "$protect" = strict ]; then
	awk "{print \$1, \$5}" /proc/self/mountinfo | while read -r id m; do
		case "$m" in /proc | /proc/* | /sys | /sys/* | /dev | /dev/*) continue ;; esac
		case " $rw " in *" $m "*) continue ;; esac
		# Only a mount that is what its path reaches: one shadowed by a
		# later mount (under the test'"'"'s overlays and /run) needs nothing.
		reached=$( (exec 9<"$m" && awk "/^mnt_id:/ {print \$2}" /proc/self/fdinfo/9) 2>/dev/null) || continue
		[ "$reached" = "$id" ] || continue
		mount -o remount,bind,ro "$m"
	done
fi
if [ "$private_tmp" = yes ]; then
	mount -t tmpfs -o mode=1777 tmpfs /tmp
	mount -t tmpfs -o mode=1777 tmpfs /var/tmp
fi
exec "$@"
'

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
