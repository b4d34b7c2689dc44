#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian packages, end to end:
#   1. dpkg-buildpackage -b -us -uc on a copy of the source tree (debian/);
#   2. lintian on the result: no error;
#   3. in a throwaway Debian root made with mmdebstrap: apt installs the
#      packages, the packaged daemon starts on the packaged default
#      configuration (/etc/cxlpool/cxlpoold.toml) the way its unit starts it,
#      answers `cxlpoolctl status` and stops cleanly; then the packages are
#      purged and nothing of theirs is left.
# Skips (77) with the reason when a tool is missing, the build dependencies
# are not installed, or the root cannot be made (no network to the mirror,
# no permission to mount /proc).
#   check_debian.sh SOURCE_DIR BUILD_DIR
# The source copy stays at BUILD_DIR/debian-pkg/cxlpool (a fixed path, so
# ccache serves a rebuild); MIRROR and SUITE pick the Debian archive
# (default: the suite of this host, deb.debian.org). CXLPOOL_DEB_REUSE=1
# checks the packages of the last build again instead of rebuilding them.
# CXLPOOL_PACKAGE_BUDGET_S (set by scripts/run-tests.sh: what is left of
# CI's time) bounds the package build: one that would run past it is
# stopped and the check skips, saying so, instead of overrunning the run.
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "check_debian: $*" >&2; exit 1; }
for tool in dpkg-buildpackage dh lintian mmdebstrap unshare; do
  command -v "$tool" >/dev/null || skip "$tool not installed (scripts/setup.sh installs it)"
done
[ "$(id -u)" -eq 0 ] || skip "needs root for the throwaway root (chroot, mounts)"
if ! missing=$(cd "$src" && dpkg-checkbuilddeps 2>&1); then
  skip "build dependencies missing: $missing"
fi

work=$build/debian-pkg
copy=$work/cxlpool
root=$work/root
mkdir -p "$work"
cleanup() {
  [ -d "$root" ] && rm -rf --one-file-system "$root"
  return 0
}
trap cleanup EXIT

# Free space in MiB of the file system holding $1 (df rounds up).
avail_mib() { df -P --block-size=1M "$1" | awk 'NR == 2 { print $4 }'; }
# The build tree (-g -O2 objects) takes about 3 GiB; dwz's temporary files
# go to TMPDIR. A disk that fills mid-build makes dwz fail with no word of
# the cause ("elf_update failed"), so too little room is a skip up front.
need_mib=$((${CXLPOOL_PACKAGE_DISK_GIB:-5} * 1024))
tmp_dir=${TMPDIR:-/tmp}

echo "== 1. dpkg-buildpackage"
if [ -n "${CXLPOOL_DEB_REUSE:-}" ] && ls "$work"/cxlpool_*.changes >/dev/null 2>&1; then
  # Iterating on the checks below: the packages of the last build.
  echo "CXLPOOL_DEB_REUSE: the packages already in $work"
else
  rm -rf "$copy" "$work"/*.deb "$work"/*.ddeb "$work"/*.changes "$work"/*.buildinfo
  free=$(avail_mib "$work")
  [ "$free" -ge "$need_mib" ] ||
    skip "only $free MiB free under $work, and a package build needs about $need_mib (CXLPOOL_PACKAGE_DISK_GIB)"
  [ "$(avail_mib "$tmp_dir")" -ge 1024 ] || skip "less than 1 GiB free in $tmp_dir for dwz's temporary files"
  mkdir -p "$copy"
  git -C "$src" ls-files -co --exclude-standard -z | (cd "$src" && xargs -0 cp --parents -a -t "$copy")
  start=$(date +%s)
  # The build's share of the budget: what is left after five minutes for
  # lintian and the throwaway root; no limit without a budget.
  limit=0
  if [ "${CXLPOOL_PACKAGE_BUDGET_S:-0}" -gt 0 ]; then
    limit=$((CXLPOOL_PACKAGE_BUDGET_S - 300))
    [ $limit -gt 60 ] || skip "only ${CXLPOOL_PACKAGE_BUDGET_S} s of the run's time left, too little for a package build"
  fi
  build_rc=0
  (cd "$copy" && DEB_BUILD_OPTIONS="parallel=$(nproc) nocheck noautodbgsym" \
     timeout "$limit" dpkg-buildpackage -b -us -uc) >"$work/dpkg-buildpackage.log" 2>&1 || build_rc=$?
  if [ $build_rc -eq 124 ]; then
    skip "dpkg-buildpackage did not finish in the $limit s this run had left (log: $work/dpkg-buildpackage.log)"
  fi
  free=$(avail_mib "$work")
  tmp_free=$(avail_mib "$tmp_dir")
  # The objects are not needed again (ccache keeps what a rebuild reuses).
  rm -rf "$copy"/obj-*
  if [ $build_rc -ne 0 ]; then
    tail -60 "$work/dpkg-buildpackage.log" >&2
    # A write that failed for room: the disk is (nearly) full still, or dwz
    # could not write, which it reports without the cause, and its
    # temporary files are gone again by now.
    if [ "$free" -lt 1024 ] || [ "$tmp_free" -lt 1024 ] ||
       grep -qE 'No space left on device|dwz: .*(elf_update failed|Error writing)' "$work/dpkg-buildpackage.log"; then
      skip "dpkg-buildpackage failed writing its output, the disk too full ($free MiB free under $work," \
           "$tmp_free MiB in $tmp_dir after it; log: $work/dpkg-buildpackage.log)"
    fi
    fail "dpkg-buildpackage failed (log: $work/dpkg-buildpackage.log; $free MiB free under $work)"
  fi
  echo "built in $(($(date +%s) - start)) s:"
fi
ls "$work"/*.deb
changes=$(ls "$work"/cxlpool_*.changes)

echo "== 2. lintian"
lintian_rc=0
lintian --fail-on error "$changes" >"$work/lintian.log" 2>&1 || lintian_rc=$?
cat "$work/lintian.log"
[ $lintian_rc -eq 0 ] || fail "lintian reports errors"
errors=$(grep -c '^E:' "$work/lintian.log" || true)
warnings=$(grep -c '^W:' "$work/lintian.log" || true)
echo "lintian: $errors error(s), $warnings warning(s)"

echo "== 3. throwaway root"
suite=${SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}
mirror=${MIRROR:-http://deb.debian.org/debian}
# The pristine root is kept as a tarball for a day: a rerun unpacks it
# instead of downloading it again.
tarball=$work/root-$suite.tar
if [ -z "$(find "$tarball" -mmin -1440 2>/dev/null)" ]; then
  start=$(date +%s)
  if ! timeout 900 mmdebstrap --variant=apt --mode=root --format=tar "$suite" "$tarball.tmp" "$mirror" \
       >"$work/mmdebstrap.log" 2>&1; then
    tail -20 "$work/mmdebstrap.log"
    rm -rf "$tarball.tmp"
    skip "mmdebstrap could not make a $suite root from $mirror in 15 minutes (network?); log: $work/mmdebstrap.log"
  fi
  mv "$tarball.tmp" "$tarball"
  echo "mmdebstrap: $suite root in $(($(date +%s) - start)) s"
fi
rm -rf --one-file-system "$root"
mkdir -p "$root"
tar -C "$root" -xf "$tarball"
# Everything below runs in a private mount namespace: /proc, /sys and /dev
# of the root disappear with it.
mkdir -p "$root/tmp/debs"
for deb in "$work"/*.deb; do
  [[ $deb == *-dbgsym_* ]] || cp "$deb" "$root/tmp/debs/"
done
cp "$src/tests/package/in_root.sh" "$root/tmp/in_root.sh"
if ! unshare --mount --propagation private true 2>/dev/null; then
  skip "cannot make a mount namespace for the root (unshare --mount refused)"
fi
if ! unshare --mount --propagation private bash -euc '
       root=$1
       mount -t proc proc "$root/proc"
       mount --rbind /sys "$root/sys"
       mount --rbind /dev "$root/dev"
       chroot "$root" /bin/bash /tmp/in_root.sh
     ' _ "$root" 2>&1 | tee "$work/in_root.log"; then
  fail "install / start / remove in the throwaway root failed (log: $work/in_root.log)"
fi
grep '^start:' "$work/in_root.log" || true   # the numbers for docs/perf.md
echo "debian package check OK"
