#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs inside the throwaway Debian root (check_debian.sh): installs the
# packages from /tmp/debs with apt, starts the packaged daemon the way its
# unit does, uses it as root and as a member of group cxlpool, stops it, and
# removes then purges the packages, checking that nothing of theirs is left.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
fail() { echo "in_root: $*" >&2; exit 1; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# /run is a tmpfs on a booted system (tmpfiles.d's /run/cxlpool goes at the
# next boot), the rest of the excluded paths are apt's and dpkg's records.
leftovers() {
  find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /run -o -path /var/log \
    -o -path /var/lib/apt -o -path /var/cache -o -path /var/lib/dpkg \) -prune -o -name '*cxlpool*' -print
}

apt-get update -qq
[ -z "$(leftovers)" ] || fail "cxlpool files before the install: $(leftovers)"

echo "== apt install"
apt-get install -y -qq --no-install-recommends /tmp/debs/*.deb >/tmp/apt-install.log 2>&1 ||
  { tail -30 /tmp/apt-install.log; fail "apt-get install failed"; }
dpkg -l 'cxlpool*' 'libcxlpool*' | grep '^ii'
getent group cxlpool >/dev/null || fail "no group cxlpool after the install (sysusers.d)"
[ -f /etc/cxlpool/cxlpoold.toml ] || fail "no /etc/cxlpool/cxlpoold.toml"
[ -d /var/lib/cxlpool ] || echo "note: /var/lib/cxlpool not made at install (no systemd-tmpfiles here)"
cxlpoold --version
cxlpoolctl --version
for page in cxlpoold.8 cxlpoolctl.8 cxlpool-io.1 cxlpoold.toml.5 libcxlpool.3; do
  [ -n "$(find /usr/share/man -name "$page.gz")" ] || fail "man page $page not installed"
done
ls /usr/lib/*/pkgconfig/cxlpool.pc >/dev/null || fail "no cxlpool.pc"

echo "== start as the unit does"
unit=/lib/systemd/system/cxlpoold.service
read -r -a exec_start < <(sed -n 's/^ExecStart=//p' "$unit")
echo "ExecStart: ${exec_start[*]}"
t0=$(date +%s%N)
"${exec_start[@]}" --check-config
echo "start: --check-config took $(ms_since "$t0") ms"
# What RuntimeDirectory=/StateDirectory= make before ExecStart runs.
mkdir -p -m 0755 /run/cxlpool
mkdir -p -m 0750 /var/lib/cxlpool
# start_daemon: runs ExecStart in the background (pid in $pid) and waits
# until cxlpoolctl status answers; the time from exec in $ready_ms.
start_daemon() {
  local t0 up=0
  t0=$(date +%s%N)
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "${exec_start[@]}" >/tmp/cxlpoold.log 2>&1 &
  pid=$!
  for _ in $(seq 1000); do
    if cxlpoolctl status >/dev/null 2>&1; then up=1; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  ready_ms=$(ms_since "$t0")
  [ $up -eq 1 ] || { cat /tmp/cxlpoold.log; fail "the packaged daemon did not answer within 10 s"; }
}
start_daemon
echo "start: the packaged daemon answered cxlpoolctl status $ready_ms ms after exec"
cxlpoolctl status
cxlpoolctl tiers
# python3-cxlpool: the installed module loads libcxlpool0's library and
# talks to the packaged daemon.
python3 -c 'import cxlpool
with cxlpool.Client(name="package-check") as c:
    print("python3-cxlpool:", cxlpool.__version__, cxlpool.library_path, len(c.tiers()), "tier(s)")' ||
  fail "the python3-cxlpool module does not import or reach the daemon"
# A member of group cxlpool (an unnamed uid) reaches the socket through
# /run/cxlpool.
gid=$(getent group cxlpool | cut -d: -f3)
setpriv --reuid=4242 --regid=4242 --groups="$gid" cxlpoolctl --socket /run/cxlpool/cxlpoold.sock status >/dev/null ||
  fail "a member of group cxlpool cannot use the socket"
echo "group cxlpool: a member reaches the socket"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ $rc -eq 0 ] || { cat /tmp/cxlpoold.log; fail "the daemon exited $rc on SIGTERM"; }
[ ! -e /run/cxlpool/cxlpoold.sock ] || fail "the socket outlived the stop"
echo "stop: clean (exit 0)"
rm -rf /run/cxlpool   # RuntimeDirectory= goes at stop
# Four more starts for the start time: exec to the first answer, each one a
# fresh /run/cxlpool as the unit makes it.
times=("$ready_ms")
for _ in 1 2 3 4; do
  mkdir -m 0755 /run/cxlpool
  start_daemon
  times+=("$ready_ms")
  kill -TERM "$pid"
  wait "$pid" || fail "the daemon exited $? on SIGTERM"
  rm -rf /run/cxlpool
done
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
echo "start: 5 starts, exec to first cxlpoolctl status answer: ${times[*]} ms (median $median ms)"

echo "== remove, then purge"
apt-get remove -y -qq cxlpoold cxlpool-tools libcxlpool-dev libcxlpool0 >/tmp/apt-remove.log 2>&1 ||
  { tail -30 /tmp/apt-remove.log; fail "apt-get remove failed"; }
[ -f /etc/cxlpool/cxlpoold.toml ] || fail "remove (not purge) dropped the conffile"
[ ! -e /usr/sbin/cxlpoold ] || fail "remove left /usr/sbin/cxlpoold"
dpkg --purge cxlpoold cxlpool-tools libcxlpool-dev libcxlpool0 >/tmp/dpkg-purge.log 2>&1 ||
  { tail -30 /tmp/dpkg-purge.log; fail "dpkg --purge failed"; }
# The dependencies apt pulled in go too where apt may remove them (it may
# refuse a protected one, e.g. systemd); only cxlpool's files are checked.
apt-get autoremove --purge -y -qq >/dev/null 2>&1 || echo "note: apt-get autoremove left the dependencies"
if dpkg -l 'cxlpool*' 'libcxlpool*' 2>/dev/null | grep -q '^[ir]'; then
  dpkg -l 'cxlpool*' 'libcxlpool*'
  fail "packages still installed after purge"
fi
left=$(leftovers)
[ -z "$left" ] || fail "left after purge: $left"
echo "purge: nothing of cxlpool left (group cxlpool stays, as Debian keeps groups)"
