# SPDX-License-Identifier: Apache-2.0
# Shared by the install checks (sourced): skip a sanitizer build, install the
# build into a DESTDIR.

# skip_sanitizer_build BUILD_DIR WHAT: exits 77 on a sanitizer build, whose
# instrumented libraries plain programs cannot load; WHAT is checked on the
# normal build.
skip_sanitizer_build() {
  local sanitize
  sanitize=$(meson introspect "$1" --buildoptions | python3 -c \
    'import json,sys; print({x["name"]:x["value"] for x in json.load(sys.stdin)}["b_sanitize"])')
  if [ "$sanitize" != "none" ]; then
    echo "SKIP: sanitizer build (b_sanitize=$sanitize); $2 is checked on the normal build"
    exit 77
  fi
}

# install_build BUILD_DIR DESTDIR: meson install without rebuilding; on
# failure prints meson's output and returns 1.
install_build() {
  local out
  if ! out=$(meson install -C "$1" --no-rebuild --quiet --destdir "$2" 2>&1); then
    echo "$out" >&2
    echo "meson install failed (is the whole build up to date? run ninja -C $1)" >&2
    return 1
  fi
}
