#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The service as installed: installs the build into a temporary DESTDIR, then
#   - `systemd-analyze verify` on the installed unit (skipped, with the
#     reason, where systemd-analyze is absent);
#   - the sysusers.d and tmpfiles.d entries applied to the DESTDIR
#     (systemd-sysusers/systemd-tmpfiles --root) give group cxlpool and the
#     two directories;
#   - the unit's ExecStart run the way systemd runs it: its exact command
#     line with the installed daemon and the installed default config, an
#     empty environment plus NOTIFY_SOCKET and WATCHDOG_USEC; it must send
#     READY=1, answer `cxlpoolctl status`, and stop with exit 0 on SIGTERM;
#   - a broken config file exits with a status the unit's
#     RestartPreventExitStatus= lists (no restart loop).
# /run/cxlpool is the host's: the run uses --state-dir in a temp dir instead
# (what RuntimeDirectory= would have made).
#   check_service.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source "$(dirname "$0")/install_common.sh"
skip_sanitizer_build "$build" "the service"
work=$(mktemp -d)
daemon_pid=
cleanup() {
  [ -z "$daemon_pid" ] || kill -KILL "$daemon_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "check_service: $*" >&2; exit 1; }

dest=$work/root
install_build "$build" "$dest" || exit 1
readarray -t opt < <(meson introspect "$build" --buildoptions | python3 -c '
import json, os, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
p = o["prefix"]
absolute = lambda d: d if d.startswith("/") else os.path.join(p, d)
print(absolute(o["libdir"])); print(absolute(o["sysconfdir"])); print(absolute(o["bindir"]))
print(absolute(o["mandir"]))')
libdir=${opt[0]}; sysconfdir=${opt[1]}; bindir=${opt[2]}; mandir=${opt[3]}

unit=$(find "$dest" -name cxlpoold.service | head -1)
[ -n "$unit" ] || fail "no cxlpoold.service installed"
config=$dest$sysconfdir/cxlpool/cxlpoold.toml
[ -f "$config" ] || fail "no default configuration at $sysconfdir/cxlpool/cxlpoold.toml"
cmp -s "$config" "$dest$sysconfdir/cxlpool/cxlpoold.example.toml" || fail "the default config is not the example"
# A second install keeps an edited default.
echo "# edited" >>"$config"
install_build "$build" "$dest" || fail "second install failed"
tail -1 "$config" | grep -q '^# edited$' || fail "a reinstall overwrote an edited $config"

unit_key() { sed -n "s/^$1=//p" "$unit"; }
for key in StateDirectory RuntimeDirectory RestartPreventExitStatus CapabilityBoundingSet ProtectSystem \
           NoNewPrivileges SystemCallFilter; do
  [ -n "$(unit_key $key)" ] || fail "the unit has no $key="
done

# systemd-analyze verify: the unit file's syntax, its dependencies, that
# ExecStart's program exists and that the Documentation= man pages resolve.
# The verified copy differs from the installed unit only in ExecStart's
# program, which points into the DESTDIR (verify --root would look for every
# unit it depends on there too); the man pages are the installed ones
# (verify --man=no where scdoc did not build them).
if command -v systemd-analyze >/dev/null; then
  mkdir "$work/verify"
  sed "s|^ExecStart=/|ExecStart=$dest/|" "$unit" >"$work/verify/cxlpoold.service"
  man_check=--man=no
  [ -f "$dest$mandir/man8/cxlpoold.8" ] && command -v man >/dev/null && man_check=--man=yes
  if ! out=$(MANPATH=$dest$mandir SYSTEMD_LOG_LEVEL=warning \
             systemd-analyze verify "$man_check" "$work/verify/cxlpoold.service" 2>&1); then
    echo "$out" >&2
    fail "systemd-analyze verify failed"
  fi
  # Warnings for other units the host has are not ours; ours must have none.
  if grep -i "cxlpoold.service" <<<"$out"; then
    fail "systemd-analyze verify warns about the unit"
  fi
  echo "systemd-analyze verify $man_check: clean"
else
  echo "systemd-analyze verify: skipped (systemd-analyze not installed; apt-get install systemd)"
fi

if command -v systemd-sysusers >/dev/null && command -v systemd-tmpfiles >/dev/null; then
  mkdir -p "$dest/etc"
  : >"$dest/etc/passwd"; : >"$dest/etc/group"
  sysusers=$(find "$dest" -path '*/sysusers.d/cxlpool.conf' | head -1)
  tmpfiles=$(find "$dest" -path '*/tmpfiles.d/cxlpool.conf' | head -1)
  [ -n "$sysusers" ] && [ -n "$tmpfiles" ] || fail "sysusers.d or tmpfiles.d entry not installed"
  systemd-sysusers --root="$dest" "$sysusers" || fail "systemd-sysusers rejected $sysusers"
  grep -q '^cxlpool:' "$dest/etc/group" || fail "systemd-sysusers made no group cxlpool"
  systemd-tmpfiles --root="$dest" --create "$tmpfiles" || fail "systemd-tmpfiles rejected $tmpfiles"
  [ -d "$dest/run/cxlpool" ] && [ -d "$dest/var/lib/cxlpool" ] || fail "tmpfiles.d made no /run/cxlpool, /var/lib/cxlpool"
  echo "sysusers.d, tmpfiles.d: applied"
else
  echo "sysusers.d, tmpfiles.d: skipped (systemd-sysusers or systemd-tmpfiles not installed)"
fi

# ExecStart as systemd runs it: the unit's command line, its programs looked
# up inside the DESTDIR, no environment but what the manager sets.
read -r -a exec_start <<<"$(unit_key ExecStart)"
for i in "${!exec_start[@]}"; do
  [[ ${exec_start[$i]} = /* ]] && exec_start[$i]=$dest${exec_start[$i]}
done
[ -x "${exec_start[0]}" ] || fail "ExecStart's program ${exec_start[0]} is not installed"
state=$work/state
mkdir -m 0755 "$state"
ctl=$dest$bindir/cxlpoolctl
export LD_LIBRARY_PATH=$dest$libdir

notify=$work/notify.sock
python3 - "$notify" "$work/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        try:
            log.write(s.recv(4096).decode() + "\n")
        except socket.timeout:
            break
PY
listener=$!
for _ in $(seq 50); do [ -S "$notify" ] && break; sleep 0.1; done
start_ns=$(date +%s%N)
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin NOTIFY_SOCKET="$notify" WATCHDOG_USEC=30000000 \
  LD_LIBRARY_PATH="$LD_LIBRARY_PATH" "${exec_start[@]}" --state-dir "$state" >"$work/daemon.log" 2>&1 &
daemon_pid=$!
ready=0
for _ in $(seq 300); do
  if grep -q '^READY=1' "$work/notify.log" 2>/dev/null; then ready=1; break; fi
  kill -0 "$daemon_pid" 2>/dev/null || break
  sleep 0.05
done
ready_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
if [ $ready -ne 1 ]; then
  cat "$work/daemon.log" >&2
  fail "the daemon sent no READY=1 within 15 s"
fi
echo "ExecStart: READY=1 after ${ready_ms} ms"
if ! status=$("$ctl" --socket "$state/cxlpoold.sock" status 2>&1); then
  echo "$status" >&2; cat "$work/daemon.log" >&2
  fail "cxlpoolctl status did not answer"
fi
grep -q "^cxlpoold " <<<"$status" || fail "unexpected status: $status"
echo "$status" | head -2
kill -TERM "$daemon_pid"
rc=0
wait "$daemon_pid" || rc=$?
daemon_pid=
kill "$listener" 2>/dev/null || true
if [ $rc -ne 0 ]; then
  cat "$work/daemon.log" >&2
  fail "SIGTERM: exit $rc, want 0"
fi
[ ! -e "$state/cxlpoold.sock" ] || fail "the socket outlived a clean stop"
echo "ExecStart: stopped cleanly on SIGTERM"

# A configuration error must not restart in a loop.
echo "[daemon]" >"$work/bad.toml"; echo "log_level = 'loud'" >>"$work/bad.toml"
rc=0
env -i "${exec_start[0]}" --config "$work/bad.toml" --state-dir "$state" >/dev/null 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "a bad config was accepted"
prevent=" $(unit_key RestartPreventExitStatus) "
[[ $prevent == *" $rc "* ]] || fail "a config error exits $rc, which RestartPreventExitStatus=$prevent does not list"
echo "config error: exit $rc, listed in RestartPreventExitStatus="
echo "service check OK"
