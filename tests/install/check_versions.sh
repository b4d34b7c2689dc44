#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every program prints "<its name> <project version>" for --version and
# exits 0, whatever else it requires on its command line.
#   check_versions.sh VERSION PROGRAM...
set -uo pipefail
version=$1; shift
status=0
for program in "$@"; do
  name=$(basename "$program")
  out=$("$program" --version 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || [ "$out" != "$name $version" ]; then
    echo "FAIL $name --version: exit $rc, printed '$out' (want '$name $version')"
    status=1
  else
    echo "ok   $out"
  fi
done
exit $status
