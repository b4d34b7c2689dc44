#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Puts the examples/ directory of the installed fio's own source (the job
# files fio ships upstream) where cxlpool-io's fio-compatibility test looks
# for it, and prints that directory. The project keeps no fio files: Debian's
# fio package ships the HOWTO but not examples/, so they come from the
# package's source through apt-get source, with a private deb-src list and
# apt state under the cache directory (the system's apt configuration is not
# touched). Nothing to do when the examples are installed already.
#   usage: scripts/fetch-fio-examples.sh [CACHE_DIR]
set -euo pipefail

for d in /usr/share/doc/fio/examples /usr/share/fio/examples; do
  if compgen -G "$d/*.fio" >/dev/null; then echo "$d"; exit 0; fi
done
command -v fio >/dev/null || { echo "fetch-fio-examples: fio is not installed (apt-get install fio)" >&2; exit 1; }
version=$(fio --version | sed 's/^fio-//')
cache=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/cxlpool}
dest="$cache/fio-$version"
if compgen -G "$dest/examples/*.fio" >/dev/null; then echo "$dest/examples"; exit 0; fi

work="$cache/apt-source"
mkdir -p "$work/lists/partial" "$work/archives/partial"
. /etc/os-release
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian ${VERSION_CODENAME:-bookworm} main" \
  >"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work" -o "Dir::Cache::archives=$work/archives"
          -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" -qq update >&2
(cd "$work" && apt-get "${apt_opts[@]}" -qq source --download-only "fio=$(dpkg-query -W -f='${Version}' fio)" >&2)
orig=$(ls "$work"/fio_*.orig.tar.* | grep -v '\.asc$' | head -n1)
mkdir -p "$dest"
tar -xf "$orig" -C "$dest" --strip-components=1 --wildcards '*/examples/*' '*/HOWTO.rst'
echo "$dest/examples"
