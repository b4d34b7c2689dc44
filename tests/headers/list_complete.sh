#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails when tests/headers/meson.build does not list exactly the public
# headers under lib/*/include, so a new header cannot skip the check.
#   list_complete.sh SOURCE_ROOT LISTED_HEADER...
set -euo pipefail
root=$1
shift
present=$(cd "$root" && find lib/*/include -type f \( -name '*.h' -o -name '*.hpp' \) | LC_ALL=C sort)
listed=$(printf '%s\n' "$@" | LC_ALL=C sort)
if [ "$present" != "$listed" ]; then
  echo "tests/headers/meson.build and lib/*/include differ (< only on disk, > only listed):" >&2
  diff <(echo "$present") <(echo "$listed") >&2 || true
  exit 1
fi
echo "$# public headers listed"
