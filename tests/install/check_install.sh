#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build into a temporary DESTDIR and checks what a packager and
# a C application see: binaries, library (shared + static), headers, the
# pkg-config file, the systemd unit, the example config, bash completions,
# (with scdoc) the man pages and the Python package (it must import); then compiles a
# C program and a C++ program against the installed files with pkg-config
# alone and runs them.
#   check_install.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source "$(dirname "$0")/install_common.sh"
skip_sanitizer_build "$build" "the install layout"
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

install_build "$build" "$dest" || exit 1
prefix=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; o={x["name"]:x["value"] for x in json.load(sys.stdin)}; print(o["prefix"]); print(o["libdir"]); print(o["sysconfdir"]); print(o["sbindir"]); print(o["bindir"])')
readarray -t opt <<<"$prefix"
root=$dest${opt[0]}
libdir=${opt[1]}; [[ $libdir = /* ]] || libdir=${opt[0]}/$libdir
sysconfdir=${opt[2]}; [[ $sysconfdir = /* ]] || sysconfdir=${opt[0]}/$sysconfdir

fail() { echo "check_install: $*" >&2; exit 1; }
for f in "$root/${opt[3]}/cxlpoold" "$root/${opt[4]}/cxlpoolctl" \
         "$root/${opt[4]}/cxlpool-tracegen" "$root/${opt[4]}/cxlpool-tiering-eval" \
         "$dest$libdir/libcxlpool.so.0" "$dest$libdir/libcxlpool.a" \
         "$root/include/cxlpool/cxlpool.h" "$root/include/cxlpool/cxlpool.hpp" \
         "$dest$libdir/pkgconfig/cxlpool.pc" "$dest$sysconfdir/cxlpool/cxlpoold.example.toml"; do
  [ -e "$f" ] || fail "missing $f"
done
unit=$(find "$dest" -name cxlpoold.service | head -1)
[ -n "$unit" ] || fail "missing cxlpoold.service"
grep -q "^ExecStart=${opt[0]}/${opt[3]}/cxlpoold" "$unit" || fail "unit's ExecStart does not point at the installed daemon"

for f in cxlpoolctl cxlpool-io; do
  [ -n "$(find "$dest" -path "*/bash-completion/completions/$f")" ] || fail "no bash completion for $f"
done
if command -v scdoc >/dev/null; then
  for page in man8/cxlpoold.8 man8/cxlpoolctl.8 man1/cxlpool-io.1 man5/cxlpoold.toml.5 man3/libcxlpool.3; do
    [ -n "$(find "$dest" -path "*/man/$page")" ] || fail "man page $page not installed (scdoc is present)"
  done
  # Every installed program has a page, in section 1 or 8, that names it.
  for prog in "$root/${opt[3]}"/* "$root/${opt[4]}"/*; do
    [ -e "$prog" ] || continue
    name=$(basename "$prog")
    page=$(find "$dest" \( -path "*/man/man1/$name.1" -o -path "*/man/man8/$name.8" \) | head -1)
    [ -n "$page" ] || fail "installed program $name has no man page (scdoc is present)"
    grep -q "^$name - " "$page" || fail "man page $page does not name $name in its NAME section"
  done
fi

# Only cxlpool_* symbols are exported (version script).
exported=$(nm -D --defined-only "$dest$libdir/libcxlpool.so.0" | awk '$2 ~ /[TDBR]/ {print $3}' | sed 's/@.*//' | sort -u)
bad=$(grep -v '^cxlpool_' <<<"$exported" | grep -v '^CXLPOOL_' || true)
[ -z "$bad" ] || fail "unexpected exported symbols: $bad"

export PKG_CONFIG_PATH=$dest$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
cat >"$dest/app.c" <<'C'
#include <cxlpool/cxlpool.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  char path[256];
  if (strcmp(cxlpool_version(), CXLPOOL_VERSION_STRING_CHECK) != 0) return 1;
  cxlpool_client *c = NULL;
  int rc = cxlpool_connect("/nonexistent/cxlpoold.sock", "install-check", &c);
  if (rc >= 0 || c != NULL) return 2;
  printf("%s: %s (%s)\n", cxlpool_version(), cxlpool_strerror(rc), cxlpool_last_error());
  return cxlpool_default_socket_path(path, sizeof path) > 0 ? 0 : 3;
}
C
version=$(pkg-config --modversion cxlpool)
cc -std=c11 -Wall -Wextra -Werror -DCXLPOOL_VERSION_STRING_CHECK="\"$version\"" "$dest/app.c" \
  $(pkg-config --cflags --libs cxlpool) -o "$dest/app_shared"
LD_LIBRARY_PATH=$dest$libdir XDG_RUNTIME_DIR=/tmp "$dest/app_shared"
cc -std=c11 -DCXLPOOL_VERSION_STRING_CHECK="\"$version\"" "$dest/app.c" \
  $(pkg-config --cflags cxlpool) "$dest$libdir/libcxlpool.a" -lstdc++ -lpthread -o "$dest/app_static"
XDG_RUNTIME_DIR=/tmp "$dest/app_static"
printf '#include <cxlpool/cxlpool.hpp>\nint main() { return cxlpool::check(0, "x"); }\n' >"$dest/app.cpp"
c++ -std=c++17 -Wall -Wextra -Werror "$dest/app.cpp" $(pkg-config --cflags --libs cxlpool) -o "$dest/app_cpp"
LD_LIBRARY_PATH=$dest$libdir "$dest/app_cpp"
# The Python package, where the build has it (-Dpython): it imports from the
# install, finding the library through the dynamic linker (the recorded
# libdir is the final one, not the DESTDIR's).
pkg=$(find "$dest" -path '*/cxlpool/__init__.py' | head -1)
if [ -n "$pkg" ]; then
  site=$(dirname "$(dirname "$pkg")")
  [ -e "$site/cxlpool/py.typed" ] || fail "the Python package lacks py.typed"
  grep -q "^LIBDIR = \"$libdir\"" "$site/cxlpool/_install_paths.py" || fail "the Python package does not record $libdir"
  got=$(env -u CXLPOOL_LIBRARY PYTHONPATH="$site" LD_LIBRARY_PATH="$dest$libdir" python3 -c \
    'import cxlpool; print(cxlpool.__version__)') || fail "the installed Python package does not import"
  [ "$got" = "$version" ] || fail "the Python package reports $got, not $version"
fi
echo "install check OK ($version, prefix ${opt[0]})"
