#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks daemon/cxlpoold.service.in with `systemd-analyze verify`. The unit is
# instantiated exactly as installed, except that @BINDIR@ points at a scratch
# directory whose cxlpoold is a link to an existing executable (verify insists
# that ExecStart= can run). verify exits 0 even for unknown or malformed
# directives and only warns, so any line it prints fails the test, apart from
# complaints about the host not running systemd, which say nothing about the unit.
set -eu

template=${1:?usage: verify_unit.sh path/to/cxlpoold.service.in}
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIP: systemd-analyze is not installed"
  exit 77
fi
[ -r "$template" ] || { echo "FAIL: cannot read $template"; exit 1; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/cxlpool-unit-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/bin"
# `command -v true` names the shell builtin, so look for the program itself.
for true_bin in /usr/bin/true /bin/true; do
  [ -x "$true_bin" ] && break
done
ln -s "$true_bin" "$scratch/bin/cxlpoold"
unit="$scratch/cxlpoold.service"
sed -e "s|@BINDIR@|$scratch/bin|g" -e "s|@SYSCONFDIR@|/etc|g" "$template" >"$unit"

if grep -n '@[A-Z_]*@' "$unit"; then
  echo "FAIL: placeholders left after substituting @BINDIR@ and @SYSCONFDIR@"
  exit 1
fi

status=0
output=$(cd "$scratch" && SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no "$unit" 2>&1) || status=$?
relevant=$(printf '%s\n' "$output" | grep -v \
  -e '^$' \
  -e 'System has not been booted with systemd' \
  -e 'Failed to connect to bus' \
  -e 'Failed to determine whether we are running in a container' || true)
noise=$(printf '%s\n' "$output" | grep -e 'System has not been booted with systemd' \
  -e 'Failed to connect to bus' -e 'Failed to determine whether we are running in a container' || true)
[ -z "$noise" ] || printf 'ignored (host, not unit):\n%s\n' "$noise"

if [ "$status" -ne 0 ] || [ -n "$relevant" ]; then
  printf 'FAIL: systemd-analyze verify (exit %s):\n%s\n' "$status" "$relevant"
  exit 1
fi
echo "OK: systemd-analyze verify printed nothing about the unit"
