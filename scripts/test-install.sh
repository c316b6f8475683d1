#!/bin/sh
# Follows README.md's install steps literally, as root, the way a new admin
# would on a fresh machine, once per way of installing: without the
# package ("manual"), with the .deb ("deb") and with the .rpm ("rpm").
# Each run happens in a throw-away mount, network and PID namespace: /etc,
# /usr, /var and /srv are overlays on a tmpfs and /run is a fresh tmpfs, so
# the users, files and packages a run installs vanish with it, nothing of
# this machine's is touched, and the daemon's loopback port is its own.
#
# The README's code blocks marked <!-- install:NAME --> run unchanged with
# `sh -e` from the checkout. Between them this script plays the svn server
# (a repository /srv/svn/main owned by the account `svn`) and a developer
# (a commit with a planted password, as `svn`, over file://), then waits
# for the review in the example config's file channel.
#
# Two stand-ins, said here and again when they act:
#   - systemd cannot manage units inside this namespace (and is often not
#     running at all in CI), so `systemctl` is a shim
#     (scripts/test-install-systemctl.sh) that runs the unit's ExecStart as
#     its User= and Group= with setpriv after creating its StateDirectory,
#     under ProtectSystem=strict (ReadWritePaths= writable) and PrivateTmp=
#     made with a mount namespace of its own. The unit's other directives
#     are checked by `systemd-analyze verify` where it exists, not applied.
#   - dnf cannot run on Debian, so the rpm run installs the .rpm with
#     `rpm -i --nodeps` where the README says `dnf install`; the rpm's own
#     scriptlets run for real.
#
# Usage: scripts/test-install.sh [manual|deb|rpm ...] (default: all three),
# after `make package`; `make test-install` does both.
set -eu
cd "$(dirname "$0")/.."
checkout=$PWD

if [ "$(id -u)" != 0 ]; then
	echo "test-install: run as root: it creates users and system paths (inside a throw-away namespace)" >&2
	exit 1
fi

if [ -z "${AICR_TEST_INSTALL_SCENARIO:-}" ]; then
	if ! command -v rpm >/dev/null 2>&1; then
		# The .rpm run's installer; a fresh machine may have no package lists yet.
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y -qq rpm >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq rpm >/dev/null; }
	fi
	missing=""
	for tool in svn svnadmin unshare setpriv runuser dpkg dpkg-deb rpm ss ip stat awk; do
		command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
	done
	if [ -n "$missing" ]; then
		echo "test-install: missing:$missing (make deps installs subversion; the rest is util-linux, iproute2, dpkg, rpm)" >&2
		exit 1
	fi
	for f in bin/aicr bin/aicr-notify; do
		[ -x "$f" ] || { echo "test-install: no $f: run make package first" >&2; exit 1; }
	done
	for pattern in 'dist/aicr_*.deb' 'dist/aicr-*.rpm'; do
		# shellcheck disable=SC2086
		set -- $pattern
		if [ "$#" != 1 ] || [ ! -f "$1" ]; then
			echo "test-install: want exactly one $pattern, found: $*; run make clean package" >&2
			exit 1
		fi
	done
	scenarios="${AICR_TEST_INSTALL_ONLY:-manual deb rpm}"
	passed=0 failed=0 failures=""
	for s in $scenarios; do
		scratch=$(mktemp -d /tmp/aicr-test-install.XXXXXX)
		echo "=== RUN   test-install/$s"
		if AICR_TEST_INSTALL_SCENARIO=$s AICR_TEST_INSTALL_SCRATCH=$scratch \
			unshare --mount --net --pid --fork --mount-proc --propagation private sh "$0"; then
			echo "--- PASS: test-install/$s"
			passed=$((passed + 1))
		else
			echo "--- FAIL: test-install/$s"
			failed=$((failed + 1))
			failures="$failures $s"
		fi
		rmdir "$scratch" 2>/dev/null || true
	done
	echo "test-install: $passed passed, $failed failed"
	[ "$failed" = 0 ] || { echo "test-install: failed:$failures" >&2; exit 1; }
	exit 0
fi

# ---- inside the namespace ----------------------------------------------
scenario=$AICR_TEST_INSTALL_SCENARIO
scratch=$AICR_TEST_INSTALL_SCRATCH
say() { echo "test-install[$scenario]: $*"; }
fail() {
	echo "test-install[$scenario]: FAIL: $*" >&2
	for f in "$scratch"/units/*.log "$scratch"/systemctl.log /var/spool/aicr/notify.log; do
		[ -f "$f" ] || continue
		echo "--- $f (last 40 lines)" >&2
		tail -n 40 "$f" >&2
	done
	exit 1
}

mount -t tmpfs -o mode=0755 tmpfs "$scratch"
for d in /etc /usr /var /srv /root; do
	mkdir -p "$scratch/overlay$d/upper" "$scratch/overlay$d/work"
	mount -t overlay overlay -o "lowerdir=$d,upperdir=$scratch/overlay$d/upper,workdir=$scratch/overlay$d/work" "$d"
done
# A /run where systemd looks present, so the packages' scripts take their
# systemd branch and call the shim.
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/systemd/system /run/lock
ip link set lo up

# A fresh machine has no aicr: whatever this host has of one (an earlier
# install, a test that ran as root with the default data_dir) is taken
# away inside the overlays, where removing only hides the host's copy.
# Without this a root-owned /var/lib/aicr left on the host made the
# package keep it and the daemon fail to open its database.
for p in /etc/aicr /var/lib/aicr /var/spool/aicr /usr/local/bin/aicr /usr/local/bin/aicr-notify \
	/usr/bin/aicr /usr/bin/aicr-notify /etc/systemd/system/aicr.service /usr/lib/systemd/system/aicr.service \
	/lib/systemd/system/aicr.service; do
	if [ -e "$p" ] || [ -L "$p" ]; then
		say "hiding this host's $p (a fresh machine has none)"
		rm -rf "$p"
	fi
done
if getent passwd aicr >/dev/null; then
	say "hiding this host's user aicr"
	userdel aicr >/dev/null 2>&1 || true
fi
if getent group aicr >/dev/null; then groupdel aicr >/dev/null 2>&1 || true; fi

# In place of the real one (in the /usr overlay): rpm and dpkg run
# maintainer scripts with a PATH of their own.
mkdir -p "$scratch/units"
sed "s|@STATE@|$scratch|g" "$checkout/scripts/test-install-systemctl.sh" >/usr/bin/systemctl
chmod 0755 /usr/bin/systemctl
say "systemd cannot run units here: systemctl is a shim that starts the unit's ExecStart as its User= with setpriv, under its ProtectSystem=strict and PrivateTmp="

# The README's blocks, by marker, in README order.
extract() {
	awk -v name="$1" '
		$0 ~ "^[ \t]*<!-- install:" name " -->[ \t]*$" { want = 1; next }
		want == 1 && /^[ \t]*```/ { match($0, /^[ \t]*/); indent = RLENGTH; want = 2; next }
		want == 2 && /^[ \t]*```[ \t]*$/ { want = 0; next }
		want == 2 { print substr($0, indent + 1) }
	' "$checkout/README.md"
}
run_block() {
	extract "$1" >"$scratch/block-$1.sh"
	[ -s "$scratch/block-$1.sh" ] || fail "README.md has no <!-- install:$1 --> code block"
	say "README block install:$1:"
	sed 's/^/    /' "$scratch/block-$1.sh"
	if ! (cd "$checkout" && sh -e "$scratch/block-$1.sh") >"$scratch/block-$1.out" 2>&1 </dev/null; then
		tail -n 40 "$scratch/block-$1.out" >&2
		fail "README block install:$1 failed"
	fi
}
# want_mode PATH OWNER:GROUP MODE, as the README's table says.
want_mode() {
	got=$(stat -c '%U:%G %a' "$1" 2>/dev/null) || fail "$1 does not exist"
	[ "$got" = "$2 $3" ] || fail "$1 is $got, README says $2 $3"
}

# The svn server this machine already is: a repository its account owns.
getent passwd svn >/dev/null || useradd --system --user-group --home-dir /srv/svn --shell /usr/sbin/nologin svn
svn_group=$(id -gn svn)
install -d -o svn -g "$svn_group" /srv/svn
runuser -u svn -- svnadmin create /srv/svn/main

case "$scenario" in
manual) run_block manual ;;
deb) run_block deb ;;
rpm)
	extract rpm | grep -q 'dnf install' || fail "README's install:rpm block no longer says dnf install; update this script"
	say "stand-in: dnf cannot run here; installing with rpm -i --nodeps (the package's scriptlets run)"
	rpm -i --nodeps "$checkout"/dist/aicr-*.rpm || fail "rpm -i"
	;;
*) fail "unknown scenario (want manual, deb or rpm)" ;;
esac

say "checking the account, files and modes"
getent passwd aicr | grep -q ':/var/lib/aicr:/usr/sbin/nologin$' || fail "user aicr: $(getent passwd aicr || echo missing)"
want_mode /etc/aicr root:aicr 750
want_mode /etc/aicr/aicr.toml root:aicr 640
want_mode /etc/aicr/trigger-secret root:aicr 640
want_mode /var/lib/aicr aicr:aicr 700
want_mode /var/spool/aicr root:aicr 2770
[ "$(wc -c </etc/aicr/trigger-secret)" -ge 40 ] || fail "trigger-secret holds fewer than 32 random bytes in base64"
if [ "$scenario" = manual ]; then
	unit=/etc/systemd/system/aicr.service
	bin=/usr/local/bin
else
	unit=/usr/lib/systemd/system/aicr.service
	bin=/usr/bin
	grep -q '^systemctl daemon-reload' "$scratch/systemctl.log" || fail "the post-install did not reload systemd"
fi
grep -q "^ExecStart=$bin/aicr daemon --config /etc/aicr/aicr.toml\$" "$unit" || fail "$unit does not start $bin/aicr"
if command -v systemd-analyze >/dev/null 2>&1; then
	systemd-analyze verify "$unit" || fail "systemd-analyze verify $unit"
	say "systemd-analyze verify $unit: ok"
fi
[ "$($bin/aicr --version)" = "$($bin/aicr version)" ] || fail "aicr --version and aicr version differ"
if [ "$scenario" = deb ]; then
	dpkg-query -W -f '${Conffiles}' aicr | grep -q '/etc/aicr/aicr.toml' || fail "/etc/aicr/aicr.toml is not a conffile"
fi

run_block configure
grep -q "$bin/aicr-notify" /srv/svn/main/hooks/post-commit || fail "the hook does not run $bin/aicr-notify (the client alone)"
run_block start

say "committing a planted password to /srv/svn/main as svn"
install -d -o svn -g "$svn_group" "$scratch/svn-config" "$scratch/wc"
as_svn() { runuser -u svn -- "$@" --config-dir "$scratch/svn-config"; }
as_svn svn checkout -q file:///srv/svn/main "$scratch/wc"
mkdir -p "$scratch/wc/app"
printf 'import requests\n\npassword = "Tr0ub4dor&3-prod"\n' >"$scratch/wc/app/payments.py"
chown -R "svn:$svn_group" "$scratch/wc/app"
(cd "$scratch/wc" && as_svn svn add -q app && as_svn svn commit -q -m "Connect payments")

# The file channel of the example config; a bound on waiting for the
# event, not a claim about speed.
reports=/var/lib/aicr/reports.jsonl
i=0
until [ -f "$reports" ] && grep -q '"revision":"1"' "$reports"; do
	i=$((i + 1))
	[ "$i" -le ${AICR_TEST_INSTALL_WAIT:-180} ] || fail "no review of r1 in $reports after ${AICR_TEST_INSTALL_WAIT:-180} s"
	systemctl is-active --quiet aicr || fail "the daemon exited"
	sleep 1
done
grep -q 'hard-coded-credential' "$reports" || fail "the review in $reports lacks the planted password: $(cat "$reports")"
if grep -q 'Tr0ub4dor' "$reports"; then fail "the report repeats the planted password"; fi
say "the review of r1 arrived in $reports"
# The daemon ran inside the unit's ProtectSystem=strict: / and /etc
# read-only, its state directory and the spool writable.
pid=$(cat "$scratch/units/aicr.pid")
for want in "/ ro" "/etc ro" "/var/lib/aicr rw" "/var/spool/aicr rw"; do
	got=$(awk -v m="${want% *}" '$5 == m { split($6, o, ","); print $5, o[1] }' "/proc/$pid/mountinfo" | tail -n 1)
	[ "$got" = "$want" ] || fail "the daemon's mount of ${want% *} is \"$got\", want \"$want\" (ProtectSystem=strict)"
done

run_block check
cat "$scratch/block-check.out"
grep -Eq '^1 .*main.* succeeded' "$scratch/block-check.out" || fail "aicr audit list does not show the review of main r1"

pid_alive() { [ -f "$scratch/units/aicr.pid" ] && systemctl is-active --quiet aicr; }
case "$scenario" in
deb)
	say "upgrade in place keeps an edited config and restarts the daemon"
	echo "# edited by test-install" >>/etc/aicr/aicr.toml
	before=$(cat "$scratch/units/aicr.pid")
	# A secret the admin gave another group keeps it; world access goes.
	chgrp "$svn_group" /etc/aicr/trigger-secret && chmod 0644 /etc/aicr/trigger-secret
	dpkg -i "$checkout"/dist/aicr_*.deb >/dev/null || fail "dpkg -i over the installed package"
	grep -q '^# edited by test-install$' /etc/aicr/aicr.toml || fail "reinstalling replaced the edited config"
	want_mode /etc/aicr/aicr.toml root:aicr 640
	want_mode /etc/aicr/trigger-secret "root:$svn_group" 640
	chgrp aicr /etc/aicr/trigger-secret
	pid_alive || fail "the daemon is not running after the upgrade"
	[ "$(cat "$scratch/units/aicr.pid")" != "$before" ] || fail "the upgrade did not restart the daemon"
	say "remove: stops the daemon, keeps the config"
	dpkg -r aicr >/dev/null || fail "dpkg -r"
	if pid_alive; then fail "the daemon still runs after dpkg -r"; fi
	[ ! -e /usr/bin/aicr ] || fail "/usr/bin/aicr left after dpkg -r"
	[ -f /etc/aicr/aicr.toml ] || fail "dpkg -r removed the config"
	say "purge: deletes config and secret, keeps the audit database and the user"
	dpkg -P aicr >/dev/null || fail "dpkg -P"
	[ ! -e /etc/aicr/aicr.toml ] && [ ! -e /etc/aicr/trigger-secret ] || fail "dpkg -P left the config or the secret"
	[ -f /var/lib/aicr/aicr.db ] || fail "dpkg -P deleted the audit database"
	getent passwd aicr >/dev/null || fail "dpkg -P deleted the aicr user"
	;;
rpm)
	say "upgrade in place keeps an edited config and restarts the daemon"
	echo "# edited by test-install" >>/etc/aicr/aicr.toml
	before=$(cat "$scratch/units/aicr.pid")
	rpm -U --replacepkgs --nodeps "$checkout"/dist/aicr-*.rpm || fail "rpm -U over the installed package"
	grep -q '^# edited by test-install$' /etc/aicr/aicr.toml || fail "the upgrade replaced the edited config"
	want_mode /etc/aicr/aicr.toml root:aicr 640
	pid_alive || fail "the daemon is not running after the upgrade"
	[ "$(cat "$scratch/units/aicr.pid")" != "$before" ] || fail "the upgrade did not restart the daemon"
	say "erase: stops the daemon, saves an edited config, keeps the audit database"
	rpm -e aicr || fail "rpm -e"
	if pid_alive; then fail "the daemon still runs after rpm -e"; fi
	[ ! -e /usr/bin/aicr ] || fail "/usr/bin/aicr left after rpm -e"
	grep -q '^# edited by test-install$' /etc/aicr/aicr.toml.rpmsave || fail "rpm -e did not keep the edited config as .rpmsave"
	[ -f /var/lib/aicr/aicr.db ] || fail "rpm -e deleted the audit database"
	;;
esac
say "ok"
