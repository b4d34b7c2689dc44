#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing (Debian 12, apt) and configures + builds into
# $BUILD_DIR (default: build). Safe to run repeatedly. --packages-only stops
# after the packages (scripts/run-demo.sh configures and builds what it runs).
set -euo pipefail
cd "$(dirname "$0")/.."
packages_only=0
[ "${1:-}" = "--packages-only" ] && packages_only=1

PACKAGES=(
  meson ninja-build pkg-config gcc g++ python3
  libfmt-dev libspdlog-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libexpected-dev
  libxxhash-dev libisal-dev libsystemd-dev libcpp-httplib-dev libssl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libnuma-dev liburing-dev libcxl-dev libdaxctl-dev libibverbs-dev librdmacm-dev libfabric-dev
  dpdk-dev libdpdk-dev libaio-dev libxdp-dev libbpf-dev fio redis-server redis-tools
  clang libclang-rt-14-dev systemd qemu-system-x86 busybox-static spin prometheus
  python3-numpy python3-torch python3-pytest
  valgrind sqlite3                      # recorded tiering traces (tests/bench/tiering/record_traces.sh)
  etcd-server                           # pod membership tests (a real etcd on loopback)
  iperf3                                # the pod transfer engine's baseline (tests/bench/fabric_bench.sh)
  ibverbs-providers libfabric-bin       # the transfer engine on rdma_rxe in the guest (tests/vm/vm_fabric_rxe.sh)
  scdoc bash-completion                 # man pages, the completions directory
  debhelper dh-python python3-all lintian mmdebstrap  # step 5: the Debian packages (tests/package)
  criu iproute2                         # CRIU's restore beside cxlpool's (tests/bench/ckpt_restore_vm.sh)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} of ${#PACKAGES[@]} packages and what they need: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: apt-get update"
  $SUDO apt-get update -qq
  # One line per package unpacked and set up, so that a long install shows
  # that it moves.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q -o quiet::NoProgress=1 --no-install-recommends \
    "${missing[@]}" | { grep --line-buffered -E '^(Unpacking|Setting up) ' || true; } | sed -u 's/^/setup: /'
else
  echo "setup: all ${#PACKAGES[@]} packages present"
fi
# fio's own example job files (cxlpool-io's fio-compatibility test): from
# the fio package's source, cached; without them that test skips, saying so.
if examples=$(scripts/fetch-fio-examples.sh 2>/tmp/cxlpool-fio-examples.log); then
  echo "setup: fio examples in $examples"
else
  echo "setup: fio examples not fetched (the fio-compatibility test will skip): $(tail -n1 /tmp/cxlpool-fio-examples.log)"
fi
((packages_only)) && exit 0

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  meson setup "$BUILD_DIR" ${MESON_ARGS:-}
fi
ninja -C "$BUILD_DIR"
