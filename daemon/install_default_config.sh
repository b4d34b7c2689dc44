#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# meson install step: puts the default configuration at
# SYSCONFDIR/cxlpool/cxlpoold.toml unless a file is already there, so that a
# reinstall never overwrites an operator's edits (the annotated copy,
# cxlpoold.example.toml, is always refreshed next to it).
#   install_default_config.sh SOURCE SYSCONFDIR
set -eu
if [ -n "${MESON_INSTALL_DRY_RUN:-}" ]; then
  exit 0
fi
target="${DESTDIR:-}$2/cxlpool/cxlpoold.toml"
if [ -e "$target" ]; then
  echo "Keeping existing $target"
  exit 0
fi
install -D -m 0644 "$1" "$target"
echo "Installing $1 to $target"
