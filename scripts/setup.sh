#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing (Debian 12, apt) and configures + builds into
# $BUILD_DIR (default: build). Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  meson ninja-build pkg-config gcc g++ python3
  libfmt-dev libspdlog-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libexpected-dev
  libxxhash-dev libisal-dev libsystemd-dev libcpp-httplib-dev libgtest-dev libgmock-dev libbenchmark-dev
  libnuma-dev liburing-dev libcxl-dev libdaxctl-dev libibverbs-dev librdmacm-dev libfabric-dev
  dpdk-dev libaio-dev libxdp-dev libbpf-dev fio redis-server redis-tools
  clang libclang-rt-14-dev systemd qemu-system-x86 busybox-static spin
  scdoc bash-completion                 # man pages, the completions directory
  debhelper lintian mmdebstrap          # slow suite: the Debian packages (tests/package)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  meson setup "$BUILD_DIR" ${MESON_ARGS:-}
fi
ninja -C "$BUILD_DIR"
